// segbloom: the whole public API in one include.
#pragma once

#include "segbloom/hashing.hpp"
#include "segbloom/options.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/sizing.hpp"
