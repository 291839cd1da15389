// segbloom info: what a filter file holds, as text or JSON.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "arguments.hpp"
#include "commands.hpp"
#include "exit_codes.hpp"
#include "filter_file.hpp"
#include "json_writer.hpp"
#include "segbloom/filter_kinds.hpp"
#include "segbloom/transition_serialization.hpp"

namespace segbloom::cli {
namespace {

// One filter's state, from any segmented kind.
struct FilterPart {
  Options options;
  FilterStats stats;
  bool counting = false;
  std::uint64_t saturated_counters = 0;
};

// Everything info reports. A transition pair has a current and (while held) a previous
// filter; a segmented filter is its own `current`.
struct Report {
  std::string path;
  std::string_view kind;       // command-line name
  std::string_view type_name;  // C++ type
  unsigned kind_id = 0;
  std::uint64_t file_bytes = 0;
  bool transition = false;
  bool in_transition = false;
  UnixSeconds ends_at = 0;
  std::chrono::seconds period{0};
  FilterPart current;
  std::optional<FilterPart> previous;
};

template <class F>
FilterPart part_of(const F& filter) {
  FilterPart part;
  part.options = filter.options();
  if constexpr (std::is_same_v<F, CountingBloomFilter>) {
    const CountingFilterStats stats = filter.stats();
    part.stats = stats;
    part.counting = true;
    part.saturated_counters = stats.saturated_counters;
  } else {
    part.stats = filter.stats();
  }
  return part;
}

template <class T>
struct IsTransition : std::false_type {};
template <class F>
struct IsTransition<TransitionFilter<F>> : std::true_type {};

Report report_of(const std::string& path, const LoadedFilter& loaded) {
  Report r;
  r.path = path;
  r.kind = cli_kind_name(loaded.filter);
  r.file_bytes = loaded.file_bytes;
  std::visit(
      [&r](const auto& filter) {
        using F = std::decay_t<decltype(filter)>;
        r.type_name = FilterKind<F>::name;
        r.kind_id = FilterKind<F>::id;
        if constexpr (IsTransition<F>::value) {
          r.transition = true;
          r.in_transition = filter.in_transition();
          r.ends_at = filter.transition_ends_at();
          r.period = filter.transition_period();
          r.current = part_of(filter.current());
          if (filter.previous() != nullptr) r.previous = part_of(*filter.previous());
        } else {
          r.current = part_of(filter);
        }
      },
      loaded.filter);
  return r;
}

std::string_view layout_name(Layout layout) { return layout == Layout::blocked ? "blocked" : "classic"; }

std::string format(const char* spec, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, spec, value);
  return buffer;
}

// "2026-12-03 10:00:00 UTC".
std::string utc_time(UnixSeconds t) {
  const std::time_t time = static_cast<std::time_t>(t);
  std::tm tm{};
  char buffer[64];
  if (::gmtime_r(&time, &tm) == nullptr || std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) {
    return std::to_string(t);
  }
  return buffer;
}

void print_filter_text(const FilterPart& part, std::ostream& out) {
  const Options& o = part.options;
  const FilterStats& stats = part.stats;
  const std::string mode = o.max_slices == 0
                               ? "growing (growth " + format("%g", o.growth) + ", tightening " +
                                     format("%g", o.tightening) + ")"
                               : "window of " + std::to_string(o.max_slices) + " slices";
  const std::string lifetime =
      o.slice_lifetime.count() == 0 ? std::string("none") : format_duration(o.slice_lifetime);
  out << "capacity:              " << o.capacity << '\n'
      << "target rate:           " << format("%g", o.false_positive_rate) << '\n'
      << "mode:                  " << mode << '\n'
      << "seed:                  " << o.seed << '\n'
      << "layout:                " << layout_name(o.layout) << '\n'
      << "slice lifetime:        " << lifetime << '\n'
      << "items:                 " << stats.size << '\n'
      << "slices:                " << stats.slices.size() << '\n'
      << "estimated rate:        " << format("%.3g", stats.estimated_false_positive_rate) << '\n'
      << "memory bytes:          " << stats.memory_bytes << '\n'
      << "rotations:             " << stats.rotations << '\n';
  if (part.counting) out << "saturated counters:    " << part.saturated_counters << '\n';
  const bool timed = o.slice_lifetime.count() > 0;
  char line[256];
  std::snprintf(line, sizeof line, "%5s %12s %10s %6s %14s %12s %7s %10s %12s%s\n", "slice", "capacity",
                "rate", "probes", "bits", "items", "fill", "est.rate", "bytes", timed ? "  opened at" : "");
  out << '\n' << line;
  for (std::size_t i = 0; i < stats.slices.size(); ++i) {
    const SliceStats& s = stats.slices[i];
    std::snprintf(line, sizeof line, "%5zu %12llu %10.3g %6u %14llu %12llu %7.4f %10.3g %12llu", i,
                  static_cast<unsigned long long>(s.capacity), s.false_positive_rate, s.probes,
                  static_cast<unsigned long long>(s.bits), static_cast<unsigned long long>(s.items),
                  s.fill_ratio, s.estimated_false_positive_rate,
                  static_cast<unsigned long long>(s.memory_bytes));
    out << line;
    if (timed) out << "  " << utc_time(s.opened_at);
    if (s.probing == Probing::triple_hashing) out << "  triple hashing";
    out << '\n';
  }
}

void print_text(const Report& r, std::ostream& out) {
  out << "file:                  " << r.path << '\n'
      << "kind:                  " << r.kind << " (" << r.type_name << ", id " << r.kind_id << ")\n"
      << "file bytes:            " << r.file_bytes << '\n';
  if (!r.transition) {
    print_filter_text(r.current, out);
    return;
  }
  out << "in transition:         "
      << (r.in_transition ? "yes, the previous filter answers until " + utc_time(r.ends_at)
                          : std::string(r.previous ? "no, the previous filter's period is over" : "no"))
      << '\n';
  if (r.previous) out << "transition period:     " << format_duration(r.period) << '\n';
  out << "\ncurrent filter (takes the writes):\n";
  print_filter_text(r.current, out);
  if (r.previous) {
    out << "\nprevious filter:\n";
    print_filter_text(*r.previous, out);
  }
}

void print_filter_json(JsonWriter& json, const FilterPart& part) {
  const Options& o = part.options;
  json.begin_object("options");
  json.field("capacity", o.capacity);
  json.field("false_positive_rate", o.false_positive_rate);
  json.field("max_slices", std::uint64_t{o.max_slices});
  json.field("growth", o.growth);
  json.field("tightening", o.tightening);
  json.field("seed", o.seed);
  json.field("layout", layout_name(o.layout));
  json.field("slice_lifetime_seconds", static_cast<std::uint64_t>(o.slice_lifetime.count()));
  json.end_object();
  json.field("items", part.stats.size);
  json.field("slice_count", std::uint64_t{part.stats.slices.size()});
  json.field("estimated_false_positive_rate", part.stats.estimated_false_positive_rate);
  json.field("memory_bytes", part.stats.memory_bytes);
  json.field("rotations", part.stats.rotations);
  if (part.counting) json.field("saturated_counters", part.saturated_counters);
  json.begin_array("slices");
  for (const SliceStats& s : part.stats.slices) {
    json.begin_object();
    json.field("capacity", s.capacity);
    json.field("false_positive_rate", s.false_positive_rate);
    json.field("probes", std::uint64_t{s.probes});
    json.field("bits", s.bits);
    json.field("items", s.items);
    json.field("set_cells", s.set_cells);
    json.field("fill_ratio", s.fill_ratio);
    json.field("estimated_false_positive_rate", s.estimated_false_positive_rate);
    json.field("memory_bytes", s.memory_bytes);
    json.field("sequence_index", std::uint64_t{s.index});
    json.field("opened_at", static_cast<std::int64_t>(s.opened_at));
    json.field("triple_hashing", s.probing == Probing::triple_hashing);
    json.end_object();
  }
  json.end_array();
}

void print_json(const Report& r, std::ostream& out) {
  JsonWriter json(out);
  json.begin_object();
  json.field("file", r.path);
  json.field("kind", r.kind);
  json.field("type", r.type_name);
  json.field("kind_id", std::uint64_t{r.kind_id});
  json.field("file_bytes", r.file_bytes);
  if (!r.transition) {
    print_filter_json(json, r.current);
  } else {
    json.field("in_transition", r.in_transition);
    json.field("transition_ends_at", static_cast<std::int64_t>(r.ends_at));
    json.field("transition_period_seconds", static_cast<std::int64_t>(r.period.count()));
    json.begin_object("current");
    print_filter_json(json, r.current);
    json.end_object();
    if (r.previous) {
      json.begin_object("previous");
      print_filter_json(json, *r.previous);
      json.end_object();
    } else {
      json.null_field("previous");
    }
  }
  json.end_object();
}

}  // namespace

int run_info(const std::vector<std::string>& argv, CommandContext& io) {
  const Arguments args("info", argv, {{"json", false}});
  args.expect_positionals(1, 1, "FILE");
  const std::string& path = args.positionals()[0];
  const Report report = report_of(path, read_filter_file(path));
  if (args.flag("json")) {
    print_json(report, io.out);
  } else {
    print_text(report, io.out);
  }
  return kExitOk;
}

}  // namespace segbloom::cli
