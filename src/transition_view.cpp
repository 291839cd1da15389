// TransitionView: the outer payload through the parser from_bytes uses, each inner
// envelope through FilterView.
#include "segbloom/transition_view.hpp"

#include <string>

namespace segbloom {
namespace {

detail::TransitionParts open_transition(std::string_view blob, const LoadLimits& limits) {
  const envelope::Header header = envelope::read_header(blob, 0, limits);
  if (!is_transition_kind(header.kind)) {
    throw FormatError("segbloom: the blob holds a " + std::string(kind_name(header.kind)) + " (kind " +
                      std::to_string(header.kind) + "), not a transition pair: read it with FilterView");
  }
  return detail::parse_transition_payload(envelope::open(blob, header.kind, limits), header.kind, limits);
}

// A FilterView of an inner envelope, which must hold a filter of kind `expected`.
FilterView inner_view(std::string_view blob, std::uint8_t expected, const LoadLimits& limits,
                      const Clock& clock, const char* which) {
  try {
    // The same kind check as from_bytes<F> makes on this envelope.
    envelope::read_header(blob, expected, limits);
    return FilterView(blob, limits, clock);
  } catch (const FormatError& e) {
    detail::throw_inner(which, e);
  }
}

}  // namespace

TransitionView::TransitionView(std::string_view blob, const LoadLimits& limits, const Clock& clock)
    : TransitionView(open_transition(blob, limits), limits, clock) {}

TransitionView::TransitionView(const detail::TransitionParts& parts, const LoadLimits& limits,
                               const Clock& clock)
    : current_(inner_view(parts.current, static_cast<std::uint8_t>(parts.kind - kTransitionKindOffset),
                          limits, clock, "current")),
      ends_at_(parts.ends_at),
      period_(parts.period),
      kind_(parts.kind) {
  if (!parts.has_previous) return;
  previous_.emplace(inner_view(parts.previous, current_.kind(),
                               detail::previous_limits(limits, parts.current.size()), clock,
                               "previous"));
  if (previous_->options().seed != current_.options().seed) {
    throw FormatError("segbloom: a transition keeps the seed: the previous filter has seed " +
                      std::to_string(previous_->options().seed) + ", the current one " +
                      std::to_string(current_.options().seed));
  }
  // Its period is over: it never answers. The clock read as TransitionFilter reads it.
  if (detail::filter_time(clock) >= ends_at_) previous_.reset();
}

}  // namespace segbloom
