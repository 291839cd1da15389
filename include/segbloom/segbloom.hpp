// segbloom: the whole public API in one include.
#pragma once

#include "segbloom/concurrent_filter.hpp"
#include "segbloom/counting_bloom_filter.hpp"
#include "segbloom/errors.hpp"
#include "segbloom/filter_view.hpp"
#include "segbloom/hashing.hpp"
#include "segbloom/leveldb_compatible_filter.hpp"
#include "segbloom/leveldb_format.hpp"
#include "segbloom/merge.hpp"
#include "segbloom/options.hpp"
#include "segbloom/scalable_bloom_filter.hpp"
#include "segbloom/serialization.hpp"
#include "segbloom/sizing.hpp"
#include "segbloom/transition_filter.hpp"
#include "segbloom/transition_serialization.hpp"
#include "segbloom/transition_view.hpp"
