// segbloom demo: the main job (see demo.hpp, feed_simulation.hpp, fp_curve.hpp).
//
// 1. The feed: a simulated short-video service on SeenStore (LevelDB in a temporary
//    directory by default, --db PATH, or Redis with --redis SOCKET), checked against
//    exact ground truth, with a policy change (target rate 0.1 % -> 0.01 %) mid-run.
//    One table row per simulated day, then a summary whose lines a test can parse:
//      repeats: 0
//      wrongly skipped before: 412 of 437466 = 0.0942 % (target 0.1 %)
// 2. The curve: measured false-positive rate against items inserted, segmented filter
//    next to one fixed-size filter of the same initial size (CSV and SVG).
#include "demo.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "arguments.hpp"
#include "atomic_file.hpp"
#include "exit_codes.hpp"
#include "feed_simulation.hpp"
#include "fp_curve.hpp"
#include "segbloom/memory_backend.hpp"
#include "segbloom/options.hpp"
#include "segbloom/store_backend.hpp"
#include "svg_plot.hpp"
#if SEGBLOOM_STORE_HAVE_LEVELDB
#include "segbloom/leveldb_backend.hpp"
#endif
#if SEGBLOOM_STORE_HAVE_REDIS
#include "segbloom/redis_backend.hpp"
#endif

namespace segbloom::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage = R"(usage: segbloom demo [options]

A simulated short-video feed served through segbloom's SeenStore, checked against
exact per-user ground truth, with a policy change (target rate) halfway through;
then the false-positive rate of a segmented filter against a fixed-size one.

Feed:
  --users N               users (default 1000)
  --days N                simulated days (default 28)
  --requests-per-day N    feed requests per user per day (default 5)
  --candidates N          videos proposed per request (default 50)
  --shown N               videos shown per request, the first unseen (default 10)
  --catalog N             videos in the catalog (default 1000000)
  --zipf S                popularity exponent: rank r has weight 1/r^S (default 1)
  --seed N                random seed (default 1)
Filters:
  --capacity N            items of a user's first slice, growing mode (default 256)
  --rate P                target rate before the change (default 0.001; "0.1%" works)
  --new-rate P            target rate after it (default 0.0001)
  --transition-day D      day of the change (default days / 2; >= days: none)
  --transition-period N   days both filters answer reads (default 7)
Store (default: LevelDB in a temporary directory, removed at exit):
  --db PATH               LevelDB directory to use (kept)
  --redis SOCKET          Redis on this Unix socket (keys segbloom-demo:*, removed at the end)
Curve:
  --curve-capacity N      capacity C of the two filters compared (default 10000)
  --probes N              absent keys asked per checkpoint (default 200000)
Output:
  --out DIR               directory of the default output files (default .)
  --csv PATH              per-day table (default DIR/segbloom-demo.csv)
  --curve-csv PATH        the curve's points (default DIR/segbloom-demo-fp.csv)
  --svg PATH              the curve, plotted (default DIR/segbloom-demo-fp.svg)
  --help                  this text

Exit status: 0 when no video was shown twice, 1 when one was, 2 for bad arguments,
4 when the store or an output file fails.
)";

struct DemoConfig {
  FeedConfig feed;
  CurveConfig curve;
  bool transition_day_given = false;
  std::string db, redis, out_dir = ".", csv, curve_csv, svg;
};

// Counts as the other commands take them ("Value formats": k/M/G suffixes, 0x hex).
std::uint64_t parse_count(std::string_view flag, std::string_view text) {
  return cli::parse_count(text, flag);
}

// A library message without its own "segbloom: " prefix (the demo's error line has one).
std::string without_prefix(std::string message) {
  if (message.rfind("segbloom: ", 0) == 0) message.erase(0, 10);
  return message;
}

std::uint32_t parse_small(std::string_view flag, std::string_view text) {
  const std::uint64_t value = parse_count(flag, text);
  if (value > 0xFFFFFFFFu) throw UsageError(std::string(flag) + ": too large: " + std::string(text));
  return static_cast<std::uint32_t>(value);
}

// A real number; "0.1%" is 0.001.
double parse_real(std::string_view flag, std::string_view text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string body(percent ? text.substr(0, text.size() - 1) : text);
  char* end = nullptr;
  const double value = std::strtod(body.c_str(), &end);
  if (body.empty() || end != body.c_str() + body.size() || !std::isfinite(value)) {
    throw UsageError(std::string(flag) + ": not a number: '" + std::string(text) + "'");
  }
  return percent ? value / 100 : value;
}

// Returns nullopt for --help.
std::optional<DemoConfig> parse(const std::vector<std::string>& args) {
  DemoConfig c;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::optional<std::string> inline_value;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    if (flag == "--help" || flag == "-h") return std::nullopt;
    if (flag.rfind("--", 0) != 0) throw UsageError("demo takes no argument '" + flag + "'");
    const auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) throw UsageError(flag + " needs a value");
      return args[++i];
    };
    FeedConfig& f = c.feed;
    if (flag == "--users") f.users = parse_count(flag, value());
    else if (flag == "--days") f.days = parse_small(flag, value());
    else if (flag == "--requests-per-day") f.requests_per_day = parse_small(flag, value());
    else if (flag == "--candidates") f.candidates = parse_small(flag, value());
    else if (flag == "--shown") f.shown = parse_small(flag, value());
    else if (flag == "--catalog") f.catalog = parse_count(flag, value());
    else if (flag == "--zipf") f.zipf = parse_real(flag, value());
    else if (flag == "--seed") f.seed = c.curve.seed = parse_count(flag, value());
    else if (flag == "--capacity") f.capacity = parse_count(flag, value());
    else if (flag == "--rate") f.rate = c.curve.rate = parse_real(flag, value());
    else if (flag == "--new-rate") f.new_rate = parse_real(flag, value());
    else if (flag == "--transition-day") {
      f.transition_day = parse_small(flag, value());
      c.transition_day_given = true;
    } else if (flag == "--transition-period") f.transition_days = parse_small(flag, value());
    else if (flag == "--db") c.db = value();
    else if (flag == "--redis") c.redis = value();
    else if (flag == "--curve-capacity") c.curve.capacity = parse_count(flag, value());
    else if (flag == "--probes") c.curve.probes = parse_count(flag, value());
    else if (flag == "--out") c.out_dir = value();
    else if (flag == "--csv") c.csv = value();
    else if (flag == "--curve-csv") c.curve_csv = value();
    else if (flag == "--svg") c.svg = value();
    else throw UsageError("unknown option " + flag);
  }
  if (!c.transition_day_given) c.feed.transition_day = std::max<std::uint32_t>(1, c.feed.days / 2);
  if (!c.db.empty() && !c.redis.empty()) throw UsageError("--db and --redis exclude each other");
  const fs::path dir(c.out_dir);
  if (c.csv.empty()) c.csv = (dir / "segbloom-demo.csv").string();
  if (c.curve_csv.empty()) c.curve_csv = (dir / "segbloom-demo-fp.csv").string();
  if (c.svg.empty()) c.svg = (dir / "segbloom-demo-fp.svg").string();
  try {
    validate(c.feed);
    // The curve inserts 16 C keys into two filters.
    if (c.curve.capacity < 1 || c.curve.capacity > 10'000'000) {
      throw std::invalid_argument("--curve-capacity must be in [1, 10^7]");
    }
    if (c.curve.probes < 1 || c.curve.probes > 100'000'000) {
      throw std::invalid_argument("--probes must be in [1, 10^8]");
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(without_prefix(e.what()));
  }
  // The files are written after the run: a directory that is not there fails now, not then.
  for (const std::string* path : {&c.csv, &c.curve_csv, &c.svg}) {
    const fs::path parent = fs::path(*path).parent_path();
    std::error_code ec;
    if (!parent.empty() && !fs::is_directory(parent, ec)) {
      throw IoError("cannot write " + *path + ": " + parent.string() + " is not a directory");
    }
    check_output_file(*path);
  }
  return c;
}

std::string percent(double rate, int digits = 4) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %%", digits, 100 * rate);
  return buf;
}

// A target rate as given: "0.1 %", "0.01 %", "0.11 %".
std::string target(double rate) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g %%", 100 * rate);
  return buf;
}

// Removes a temporary LevelDB directory on every way out.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ignored;
    if (!path.empty()) fs::remove_all(path, ignored);
  }
};

struct Store {
  std::shared_ptr<StoreBackend> backend;
  std::string description;
  bool remove_keys_at_exit = false;
};

Store open_store(const DemoConfig& c, TempDir& temp) {
  if (!c.redis.empty()) {
#if SEGBLOOM_STORE_HAVE_REDIS
    RedisConfig redis;
    redis.unix_socket = c.redis;
    redis.key_prefix = "segbloom-demo:";
    return {make_redis_backend(redis), "redis at " + c.redis + " (keys segbloom-demo:*)", true};
#else
    throw UsageError("--redis: this build has no Redis support (libhiredis-dev not found)");
#endif
  }
#if SEGBLOOM_STORE_HAVE_LEVELDB
  std::string path = c.db;
  std::string where;
  if (path.empty()) {
    std::string pattern = (fs::temp_directory_path() / "segbloom-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw IoError("cannot create a temporary directory");
    temp.path = pattern;
    path = pattern + "/db";
    where = " (temporary, removed at exit)";
  }
  return {make_leveldb_backend({.path = path}), "leveldb at " + path + where, false};
#else
  (void)temp;
  if (!c.db.empty()) throw UsageError("--db: this build has no LevelDB support");
  return {make_memory_backend({.byte_budget = std::uint64_t{1} << 34}),
          "memory (this build has no LevelDB)", false};
#endif
}

std::string day_csv(const std::vector<DayStats>& days) {
  std::ostringstream s;
  s << "day,phase,target_rate,requests,shown,repeats,forgotten,unseen_checked,wrongly_skipped,"
       "skip_rate,blob_bytes_per_user,id_bytes_per_user,users_old_policy,users_in_transition,"
       "users_new_policy,requests_per_second,seen_skipped\n";
  for (const DayStats& d : days) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%u,%s,%.6g,%llu,%llu,%llu,%llu,%llu,%llu,%.8g,%.1f,%.1f,%llu,%llu,%llu,%.0f,%llu\n",
                  d.day, phase_name(d.phase), d.target, static_cast<unsigned long long>(d.requests),
                  static_cast<unsigned long long>(d.shown), static_cast<unsigned long long>(d.repeats),
                  static_cast<unsigned long long>(d.forgotten),
                  static_cast<unsigned long long>(d.unseen_checked),
                  static_cast<unsigned long long>(d.wrongly_skipped), d.skip_rate(),
                  d.blob_bytes_per_user, d.id_bytes_per_user,
                  static_cast<unsigned long long>(d.policy.old_policy),
                  static_cast<unsigned long long>(d.policy.in_transition),
                  static_cast<unsigned long long>(d.policy.new_policy), d.requests_per_second(),
                  static_cast<unsigned long long>(d.seen_skipped));
    s << buf;
  }
  return s.str();
}

std::string curve_csv(const std::vector<CurvePoint>& points, double rate) {
  std::ostringstream s;
  s << "items,multiple_of_capacity,probes,segmented_false_positives,segmented_rate,"
       "segmented_slices,segmented_bytes,fixed_false_positives,fixed_rate,fixed_bytes,target_rate\n";
  for (const CurvePoint& p : points) {
    char buf[320];
    std::snprintf(buf, sizeof buf, "%llu,%g,%llu,%llu,%.8g,%zu,%llu,%llu,%.8g,%llu,%.6g\n",
                  static_cast<unsigned long long>(p.items), p.multiple,
                  static_cast<unsigned long long>(p.probes),
                  static_cast<unsigned long long>(p.segmented_hits), p.segmented_rate(),
                  p.segmented_slices, static_cast<unsigned long long>(p.segmented_bytes),
                  static_cast<unsigned long long>(p.fixed_hits), p.fixed_rate(),
                  static_cast<unsigned long long>(p.fixed_bytes), rate);
    s << buf;
  }
  return s.str();
}

std::string curve_svg(const std::vector<CurvePoint>& points, const CurveConfig& c) {
  LogPlot plot;
  plot.title = "False-positive rate as the filter fills";
  plot.subtitle = "capacity C = " + std::to_string(c.capacity) + " items, target p = " +
                  target(c.rate) + ", " + std::to_string(c.probes) +
                  " absent keys per point (0 measured: not drawn)";
  plot.x_label = "items inserted (multiples of the capacity C)";
  plot.y_label = "measured false-positive rate";
  plot.x_min = 0;
  plot.x_max = points.empty() ? 1 : points.back().multiple;
  plot.x_tick_step = plot.x_max > 8 ? 2 : 1;
  plot.x_tick_suffix = "C";
  double lowest = std::min(c.rate, 1.0 / static_cast<double>(c.probes));
  for (const CurvePoint& p : points) {
    if (p.segmented_hits) lowest = std::min(lowest, p.segmented_rate());
    if (p.fixed_hits) lowest = std::min(lowest, p.fixed_rate());
  }
  plot.y_min_decade = std::max(-9, static_cast<int>(std::floor(std::log10(lowest))));
  plot.y_max_decade = 0;
  PlotSeries segmented{"segmented filter (segbloom, growing)", "#1f77b4", {}, false, true};
  PlotSeries fixed{"fixed-size Bloom filter, same initial size", "#d62728", {}, false, true};
  for (const CurvePoint& p : points) {
    segmented.points.emplace_back(p.multiple, p.segmented_rate());
    fixed.points.emplace_back(p.multiple, p.fixed_rate());
  }
  PlotSeries goal{"target p = " + target(c.rate), "#555555", {{plot.x_min, c.rate}, {plot.x_max, c.rate}},
                  true, false};
  plot.series = {segmented, fixed, goal};
  return render_svg(plot);
}

void print_header(std::ostream& out, const DemoConfig& c, const std::string& store) {
  const FeedConfig& f = c.feed;
  out << "segbloom demo: a simulated short-video feed served through SeenStore\n"
      << "  " << f.users << " users x " << f.requests_per_day << " requests a day x " << f.days
      << " days; " << f.candidates << " candidates a request, up to " << f.shown << " shown\n"
      << "  Zipf(" << f.zipf << ") popularity over " << f.catalog << " videos; seed " << f.seed << "\n"
      << "  store: " << store << "\n"
      << "  filter: growing, capacity " << f.capacity << ", target " << target(f.rate) << "\n";
  if (f.transition_day < f.days) {
    out << "  policy change on day " << f.transition_day << ": target " << target(f.rate) << " -> "
        << target(f.new_rate) << ", transition period " << f.transition_days
        << " days (simulated clock)\n";
  } else {
    out << "  no policy change (--transition-day " << f.transition_day << " >= --days)\n";
  }
  out << "\n day phase   requests    shown repeats forgot  unseen-checked skipped  skip-rate   target"
         "  blob-B/user  ids-B/user  old/trans/new    req/s\n";
}

void print_day(std::ostream& out, const DayStats& d) {
  char buf[320];
  const std::string policy = std::to_string(d.policy.old_policy) + "/" +
                             std::to_string(d.policy.in_transition) + "/" +
                             std::to_string(d.policy.new_policy);
  std::snprintf(buf, sizeof buf, "%4u %-7s %8llu %8llu %7llu %6llu %15llu %7llu %8.4f %% %6.3g %% %12.0f %11.0f  %-14s %7.0f\n",
                d.day, phase_name(d.phase), static_cast<unsigned long long>(d.requests),
                static_cast<unsigned long long>(d.shown), static_cast<unsigned long long>(d.repeats),
                static_cast<unsigned long long>(d.forgotten),
                static_cast<unsigned long long>(d.unseen_checked),
                static_cast<unsigned long long>(d.wrongly_skipped), 100 * d.skip_rate(),
                100 * d.target, d.blob_bytes_per_user, d.id_bytes_per_user, policy.c_str(),
                d.requests_per_second());
  out << buf << std::flush;
}

// Sums of the days of one phase.
DayStats total(const std::vector<DayStats>& days, std::optional<Phase> phase) {
  DayStats sum;
  for (const DayStats& d : days) {
    if (phase && d.phase != *phase) continue;
    sum.target = d.target;
    sum.requests += d.requests;
    sum.shown += d.shown;
    sum.repeats += d.repeats;
    sum.forgotten += d.forgotten;
    sum.unseen_checked += d.unseen_checked;
    sum.wrongly_skipped += d.wrongly_skipped;
    sum.seen_skipped += d.seen_skipped;
    sum.store_seconds += d.store_seconds;
  }
  return sum;
}

void print_summary(std::ostream& out, const DemoConfig& c, const std::vector<DayStats>& days,
                   const std::vector<CurvePoint>& curve) {
  const DayStats all = total(days, std::nullopt);
  const DayStats& last = days.back();
  char buf[320];
  out << "\nsummary\n";
  std::snprintf(buf, sizeof buf, "  requests: %llu in %.2f s of store calls (%.0f requests/s)\n",
                static_cast<unsigned long long>(all.requests), all.store_seconds,
                all.requests_per_second());
  out << buf;
  out << "  videos shown: " << all.shown << "\n";
  out << "  candidates skipped as seen, rightly: " << all.seen_skipped << "\n";
  out << "  repeats: " << all.repeats << "\n";
  out << "  wrongly skipped: " << all.wrongly_skipped << " of " << all.unseen_checked << " = "
      << percent(all.skip_rate()) << " (target " << target(c.feed.rate) << ")\n";
  for (const Phase phase : {Phase::before, Phase::during, Phase::after}) {
    const DayStats p = total(days, phase);
    if (p.requests == 0) continue;
    out << "  wrongly skipped " << phase_name(phase) << ": " << p.wrongly_skipped << " of "
        << p.unseen_checked << " = " << percent(p.skip_rate()) << " (target " << target(p.target)
        << ")\n";
  }
  if (c.feed.transition_day < c.feed.days) {
    out << "  forgotten with the old policy: " << all.forgotten
        << " (seen only before the change, shown again once the old filter was dropped)\n";
    out << "  users on the new policy: " << last.policy.new_policy << " of " << c.feed.users << "\n";
  }
  std::snprintf(buf, sizeof buf, "  bytes per user: %.0f (an exact list of 8-byte ids: %.0f)\n",
                last.blob_bytes_per_user, last.id_bytes_per_user);
  out << buf;
  if (!curve.empty()) {
    const CurvePoint& end = curve.back();
    const auto at = [&](double multiple) {
      const auto it = std::find_if(curve.begin(), curve.end(),
                                   [&](const CurvePoint& p) { return p.multiple >= multiple; });
      return it == curve.end() ? end : *it;
    };
    const CurvePoint one = at(1.0);
    std::snprintf(buf, sizeof buf,
                  "  fp rate at 1 C items: segmented %s, fixed %s (target %s)\n"
                  "  fp rate at %g C items: segmented %s (%zu slices, %llu bytes), "
                  "fixed %s (%llu bytes)\n",
                  percent(one.segmented_rate()).c_str(), percent(one.fixed_rate()).c_str(),
                  target(c.curve.rate).c_str(), end.multiple, percent(end.segmented_rate()).c_str(),
                  end.segmented_slices, static_cast<unsigned long long>(end.segmented_bytes),
                  percent(end.fixed_rate()).c_str(), static_cast<unsigned long long>(end.fixed_bytes));
    out << buf;
  }
}

}  // namespace

int run_demo(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::optional<DemoConfig> parsed;
  try {
    parsed = parse(args);
  } catch (const UsageError& e) {
    err << "segbloom: demo: " << without_prefix(e.what()) << " (segbloom demo --help lists the options)\n";
    return kExitUsage;
  } catch (const IoError& e) {
    err << "segbloom: demo: " << without_prefix(e.what()) << "\n";
    return kExitIo;
  }
  if (!parsed) {
    out << kUsage;
    return kExitOk;
  }
  const DemoConfig& c = *parsed;
  std::vector<DayStats> days;
  std::vector<CurvePoint> curve;
  try {
    TempDir temp;
    {
      Store store = open_store(c, temp);
      print_header(out, c, store.description);
      days = run_feed(c.feed, store.backend, [&out](const DayStats& d) { print_day(out, d); });
      if (store.remove_keys_at_exit) {
        for (std::uint64_t u = 0; u < c.feed.users; ++u) store.backend->remove(demo_user(u));
      }
    }  // the backend is closed before its temporary directory is removed
    out << "\nmeasuring the false-positive curve (" << c.curve.probes
        << " absent keys per point)...\n" << std::flush;
    curve = measure_fp_curve(c.curve);
    print_summary(out, c, days, curve);
    // Whole or not at all, as the tool's filter files (atomic_file.hpp); a device or FIFO
    // is written into.
    write_output_file(c.csv, day_csv(days));
    write_output_file(c.curve_csv, curve_csv(curve, c.curve.rate));
    write_output_file(c.svg, curve_svg(curve, c.curve));
    out << "  files: " << c.csv << ", " << c.curve_csv << ", " << c.svg << "\n";
  } catch (const UsageError& e) {
    err << "segbloom: demo: " << without_prefix(e.what()) << "\n";
    return kExitUsage;
  } catch (const StoreError& e) {  // the store's messages carry the library's prefix
    err << "segbloom: demo: store: " << without_prefix(e.what()) << "\n";
    return kExitIo;
  } catch (const IoError& e) {
    err << "segbloom: demo: " << without_prefix(e.what()) << "\n";
    return kExitIo;
  }
  const DayStats all = total(days, std::nullopt);
  if (all.repeats != 0) {
    err << "segbloom: demo: " << all.repeats << " videos were shown again to users who had seen them\n";
    return kExitInternal;
  }
  return kExitOk;
}

}  // namespace segbloom::cli
