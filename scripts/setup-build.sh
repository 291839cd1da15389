# Sourced by scripts/test.sh, scripts/demo.sh and scripts/fuzz.sh.
# setup_build DIR gcc|clang [-Doption=value...] sets DIR up with that compiler (g++ or
# clang++), the project's defaults below and the options given (a later -D of an option
# overrides an earlier one). All of them are set again when DIR is set up already: Meson
# keeps any option not given, from whatever set DIR up before (-Dtests=false, a sanitizer,
# another buildtype). They are set with `meson configure`: `meson setup --reconfigure -D...`
# ignores the b_ options (b_sanitize, b_lundef; Meson 1.0.1, mesonbuild/meson#11732).
# Meson reads CXX only when it first sets a directory up: one set up with another compiler
# is removed and set up from scratch.
setup_build() {
  local dir=$1 compiler=$2 cxx
  shift 2
  case $compiler in
    gcc) cxx=g++ ;;
    clang) cxx=clang++ ;;
    *) echo "setup_build: unknown compiler $compiler" >&2; return 1 ;;
  esac
  local options=(-Dbuildtype=debugoptimized -Db_ndebug=if-release -Db_sanitize=none
                 -Db_lundef=true -Dtests=true -Dbenchmarks=true -Dfuzz=false "$@")
  # The log names the compiler's id in parentheses: "C++ compiler for the host machine:
  # c++ (gcc 12.2.0 ...)".
  if [[ -e $dir ]] && ! grep -q "^C++ compiler for the host machine: .* ($compiler " \
       "$dir/meson-logs/meson-log.txt" 2>/dev/null; then
    echo "segbloom: $dir was set up with another compiler (or not at all): set up again with $cxx" >&2
    rm -rf "$dir"
  fi
  if [[ -f $dir/build.ninja ]]; then
    meson configure "$dir" "${options[@]}" >/dev/null
    meson setup --reconfigure "$dir" >/dev/null
  else
    CXX=$cxx meson setup "$dir" "${options[@]}" >/dev/null
  fi
}
