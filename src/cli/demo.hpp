// segbloom demo: the main job, a simulated feed served through the seen-store.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace segbloom::cli {

// Runs `segbloom demo` with the arguments after "demo"; returns the process exit code.
int run_demo(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace segbloom::cli
