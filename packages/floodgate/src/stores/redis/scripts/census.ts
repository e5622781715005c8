/**
 * CENSUS_LUA counts the processes drawing on one Redis: each store beats on it now and then, and
 * the reply is how many beat within the last `ARGV[2]` ms (on the server's clock).
 *
 * KEYS[1]: the census's sorted set (member: a store's id, score: its last beat in ms). ARGV: [1] this
 * store's id, [2] how long a beat counts, in ms. Reply: the number of stores counted, this one included.
 */
export const CENSUS_LUA = String.raw`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local span = tonumber(ARGV[2])
if span == nil or span <= 0 then return redis.error_reply('FLOODGATE census span must be above 0, got ' .. tostring(ARGV[2])) end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - span)
redis.call('PEXPIRE', KEYS[1], 2 * span)
return redis.call('ZCARD', KEYS[1])
`;
