// segbloom: the Redis backend's compare-and-set script (redis_backend.cpp), in a header of its
// own so that the tests can run it directly.
#pragma once

#include <string_view>

namespace segbloom::store_detail {

// Compare-and-set, atomically inside Redis. KEYS[1]: the user's hash; ARGV[1]: the
// expected version ("" = absent: neither 'v' nor 'd', as read() sees it; "foreign" = a
// hash whose 'v' is missing beside a 'd', or not a version this backend writes);
// ARGV[2]: the new version; ARGV[3]: the blob; ARGV[4]: TTL in milliseconds (0 = none).
// Returns 1 when stored, 0 on a mismatch.
//
// TTL 0 removes an expiry the hash has (PERSIST): HSET keeps it, and a deployment that
// moves from a TTL to none must not lose its earlier users to the old one. Until 4 Dec
// 2026 a write with TTL 0 left it in place.
//
// The TTL is checked before anything is written, since Redis does not undo a script's
// writes when a later command fails: a decimal of at most 15 digits (31 000 years, so
// that PEXPIRE's now + TTL cannot overflow), passed to PEXPIRE as it came. Until 2 Dec 2026
// it went through a Lua number, which Redis passes on in exponent form from 10^17 on:
// PEXPIRE refused it after HSET had stored the blob, and the caller got StoreErrc::io.
//
// A version is the canonical decimal of 1 .. 2^64 - 2 (no sign, no leading zero), as
// read() parses it: a hash damaged or written by someone else then reads as foreign and is
// overwritten by a write that expects "foreign" (until 1 Dec 2026 it read as foreign and
// never matched, so such a user could never be written again).
//
// Field 'h' holds the versions of the last four writes, newest first, separated by
// spaces. A write whose new version is among them reports success without writing: the
// backend sends the same command again on a fresh connection when a reply is lost (a
// timeout, a dropped connection), and the new version is a random token of this write, so
// the first send landed (and any writer that wrote since had read it). Until 2 Dec 2026 a
// resend read as a conflict, and take_unseen returned nothing for items it had just marked
// seen; the first fix that day recognised only the current version, so this still happened
// when another writer wrote between the lost reply and the resend. Four versions cost about 80 bytes a user; a resend follows its lost
// reply within one connect_timeout + command_timeout, so more than three writes of the same
// user by others in that time are not expected.

constexpr std::string_view kCompareAndSetScript = R"lua(
local ttl = ARGV[4]
if #ttl > 15 or not (ttl == '0' or string.match(ttl, '^[1-9]%d*$')) then
  return redis.error_reply('segbloom: TTL must be a decimal of at most 15 digits, not ' .. ttl)
end
local recent = redis.call('HGET', KEYS[1], 'h') or ''
if string.find(' ' .. recent .. ' ', ' ' .. ARGV[2] .. ' ', 1, true) then return 1 end
local current = redis.call('HGET', KEYS[1], 'v')
if current == false then
  if redis.call('HEXISTS', KEYS[1], 'd') == 1 then current = 'foreign' else current = '' end
elseif not (string.match(current, '^[1-9]%d*$') and
            (#current < 20 or (#current == 20 and current < '18446744073709551615'))) then
  current = 'foreign'
end
if current == ARGV[2] then return 1 end
if current ~= ARGV[1] then return 0 end
local kept = ARGV[2]
local count = 1
for version in string.gmatch(recent, '%S+') do
  if count == 4 then break end
  kept = kept .. ' ' .. version
  count = count + 1
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3], 'h', kept)
if ttl == '0' then redis.call('PERSIST', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
)lua";

}  // namespace segbloom::store_detail
