// Test support: refusals checked for their documented type and their message at once.
#pragma once

#include <catch2/catch.hpp>

#include <exception>
#include <string>

#include "segbloom/errors.hpp"

namespace segbloom::test {

// Matches an exception whose what() contains `text`.
class MessageContains : public Catch::MatcherBase<std::exception> {
 public:
  explicit MessageContains(std::string text) : text_(std::move(text)) {}
  bool match(const std::exception& e) const override { return std::string(e.what()).find(text_) != std::string::npos; }
  std::string describe() const override { return "message contains \"" + text_ + "\""; }

 private:
  std::string text_;
};

}  // namespace segbloom::test

// `expr` throws segbloom::FormatError (not merely some exception) saying `text`.
#define CHECK_FORMAT_ERROR(expr, text) \
  CHECK_THROWS_MATCHES(expr, segbloom::FormatError, segbloom::test::MessageContains(text))
