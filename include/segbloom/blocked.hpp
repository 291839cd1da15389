// segbloom: the blocked layout, one 64-byte cache line per key per slice. All its parts:
//
//   blocked/layout.hpp        where a key's bits are (its block, its k in-block positions)
//                             and how a kernel reads a block (PlainLoads, StoredLoads)
//   blocked/contains.hpp      the per-key test: portable, AVX2, AVX-512 (and their inline
//                             assembly forms), `contains` choosing among them
//   blocked/insert.hpp        `set` (one key) and `set_group` (a group into one slice)
//   blocked/lookup_group.hpp  the batch kernels: a group of keys against every slice
//   blocked/lookup_many.hpp   a batch of lookups: groups hashed ahead, prefetching
//
// Every implementation of a test or an insert gives the same answers and leaves the same
// bits, so a filter saved on one CPU answers the same on another.
#pragma once

#include "segbloom/blocked/contains.hpp"
#include "segbloom/blocked/insert.hpp"
#include "segbloom/blocked/layout.hpp"
#include "segbloom/blocked/lookup_group.hpp"
#include "segbloom/blocked/lookup_many.hpp"
