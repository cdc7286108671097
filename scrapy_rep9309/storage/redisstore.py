"""The store of a fleet: records, fetch leases and held requests in Redis, shared by every
crawl process that names the same Redis and prefix.

Needs the ``redis`` package (``pip install "scrapy-rep9309[redis]"``) and an asyncio
event loop; never imports Scrapy (the Scrapy-facing subclass, with ``from_crawler``, is
``scrapy_rep9309.integration.fleet.RedisStore``).

What lives where, under ``<prefix>:`` (default ``rep9309:``):

- ``record:<origin>``: a hash ``{v: version, d: header JSON + "\\n" + body}``, expiring
  when the record is of no more use (its TTL plus ``REP9309_STALE_TTL``; in backoff, past
  its retry plus ``REP9309_RETRY_MAX_DELAY``, so the doubling goes on). ``save`` is a
  compare-and-set on ``v`` in one Lua script, which also publishes the origin on
  ``changes`` for the other processes. Versions come from one counter that never goes
  back, not even when Redis lost its data (it starts again from the server's clock).
- ``lease:<origin>``: the fetch lease, ``SET NX PX`` with the owner token; renewed and
  released by a script that checks the owner first.
- ``held:<origin>``: a hash of held requests, ``<process>:<token>`` -> ``<seq> <deadline>
  <request>``; ``holders`` lists the processes holding requests and ``holding:<process>``
  the origins each one holds requests for. ``alive:<process>`` is each process's
  heartbeat (renewed every second, gone 5 s after the process is): a process whose
  heartbeat is gone is stopped or dead, and the requests it held are orphans that the
  others adopt (``adopt_orphans``).
- ``generation``: a random token written once; when it is missing Redis lost its data
  (a restart without persistence), and every process writes its held requests again
  from the copy it keeps (``_mine``), so that none is lost with it.

Taking held requests (``take_held``, ``adopt_orphans``) is idempotent: a script keeps
what it took under a receipt (an adoption's for a minute), and a call repeated after a
lost reply (the client retries once; a take the caller repeats reuses its receipt) gets
the same requests back instead of none (a take of every request of an origin also
those held since). The receipts of
``take_held`` also stand for the requests until the process has handed them to the
engine (``handed_over``, which drops them): listed in ``receipts:<process>`` (and the
process in ``receipting``), those of a process killed in between are adopted with its
held requests, so that none is lost in that moment. (A taker that cannot drop them,
Redis unreachable as it closes, or frozen past its heartbeat in that moment, leaves
them to be adopted too: a second copy, which scrapy-redis's duplicate filter drops
unless the request has ``dont_filter``.)

Every call that cannot reach Redis raises ``StoreUnavailable``, except ``hold``: a
request that cannot be written is kept in this process and written once Redis answers
again, so a request is never lost because Redis was down when it had to wait.
Redis content is trusted like the crawl's own queue; what is read is bounded all the
same (a record larger than ``max_size`` plus a header is ignored, with a WARNING).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import logging
import math
import os
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from redis import asyncio as aioredis
from redis.asyncio.client import PubSub
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisError, ResponseError

from scrapy_rep9309.policy.fetchresult import DEFAULT_MAX_SIZE
from scrapy_rep9309.policy.record import (
    OriginRecord,
    RecordTiming,
)
from scrapy_rep9309.storage.base import (
    EVERY_RECORD,
    ChangeCallback,
    HeldRequest,
    HoldWithdrawn,
    RequestCodec,
    StoredRecord,
    StoreUnavailable,
    UnencodableRequest,
)

logger = logging.getLogger(__name__)

DEFAULT_PREFIX = "rep9309"
#: Bytes a record's header (its JSON) may take besides the body.
HEADER_LIMIT = 4096
#: A longer final URL of a redirected robots.txt is not shared (the header must fit):
#: a spider's robots.txt request then gets its own URL as ``response.url``.
REDIRECT_LIMIT = 2048
#: Characters of a failure description kept in a record (the rest is cut).
FAILURE_LIMIT = 1000
#: Seconds between heartbeats; each also checks the generation and writes what waits.
HEARTBEAT_INTERVAL = 1.0
#: Seconds after its last heartbeat a process counts as gone.
ALIVE_TTL = 5.0
#: Whether the pool's ``get_connection`` wants a command name (redis-py before 5.3; later
#: versions warn when one is given).
_GET_CONNECTION_NEEDS_NAME = (
    inspect.signature(aioredis.BlockingConnectionPool.get_connection)
    .parameters["command_name"]
    .default
    is inspect.Parameter.empty
)
#: Seconds the receipt of an adoption is kept, for a repeated call. A take's receipt is
#: kept until the taker handed its requests over, or the peers adopted them.
RECEIPT_TTL = 60.0
#: Orphaned requests adopted per call at most (the script runs inside Redis).
ADOPT_LIMIT = 1000
#: Held requests written in one script call at most.
HOLD_BATCH = 500
#: Takes of held requests sent in one pipelined round trip at most.
TAKE_BATCH = 200
#: Connections to Redis per process at most (one of them listens for changes).
MAX_CONNECTIONS = 16
#: Seconds ``close`` spends writing requests held while Redis was down.
CLOSE_FLUSH_TIMEOUT = 5.0
#: Stat counting records in Redis that could not be read.
CORRUPT_STAT = "robotstxt/store/corrupt"
#: Stat counting held requests in Redis that could not be read back (dropped).
UNREADABLE_HELD_STAT = "robotstxt/store/held_unreadable"
_GENERATION_ERROR = "REP9309GENERATION"
#: How Redis refuses a command on a key of another type (a string where a hash is read).
_WRONG_TYPE_ERROR = "WRONGTYPE"
#: A take's whole answer when the origin's held key held another Redis type (deleted).
FOREIGN_HELD = b"!foreign-held-key"
_T = TypeVar("_T")
#: A take waiting for its batch: origin key, tokens (None: all), the answer.
#: A take asked for: the key, the tokens (None: all), and its answer: the requests taken
#: and the receipt that stands for them (None when no script call was needed).
_Take = tuple[
    str, "Sequence[Hashable] | None", "asyncio.Future[tuple[list[HeldRequest], str | None]]"
]

_GENERATION_CHECK = f"""
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return redis.error_reply('{_GENERATION_ERROR} Redis lost its data')
end
"""

# KEYS: record, version counter. ARGV: expected version ('' = none), data, ttl ms,
# channel, message. Returns the new version, or false when someone else wrote first.
_SAVE = """
local current = redis.call('HGET', KEYS[1], 'v')
if ARGV[1] == '' then
  if current then return false end
elseif current ~= ARGV[1] then
  return false
end
local version = redis.call('INCR', KEYS[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if version < now then
  version = now
  redis.call('SET', KEYS[2], version)
end
redis.call('HSET', KEYS[1], 'v', version, 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return version
"""

# KEYS: record. ARGV: size limit. Returns false, {version, size} when too large, or
# {version, size, data}: the data is never sent when it is larger than the limit.
_LOAD = """
local version = redis.call('HGET', KEYS[1], 'v')
if not version then return false end
local size = redis.call('HSTRLEN', KEYS[1], 'd')
if size > tonumber(ARGV[1]) then return {version, size} end
return {version, size, redis.call('HGET', KEYS[1], 'd')}
"""

# KEYS: record, lease. ARGV: size limit, owner, ttl ms. _LOAD's answer when there is a
# record; otherwise the fetch lease is taken (or renewed, if ours already) in the same
# call: {'', 1} granted, {'', 0} someone else has it.
_LOAD_OR_LEASE = """
local version = redis.call('HGET', KEYS[1], 'v')
if version then
  local size = redis.call('HSTRLEN', KEYS[1], 'd')
  if size > tonumber(ARGV[1]) then return {version, size} end
  return {version, size, redis.call('HGET', KEYS[1], 'd')}
end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {'', 1} end
if redis.call('GET', KEYS[2]) == ARGV[2] then
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return {'', 1}
end
return {'', 0}
"""

# KEYS: record. ARGV: version. Deletes the record only if it is still that version.
_DROP = """
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""

# KEYS: lease. ARGV: owner, ttl ms.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""

# KEYS: lease. ARGV: owner.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
"""

# KEYS: generation, holders, holding:<me>, seq. ARGV: generation, prefix, me, then
# origin key, entry id, value for each request (a batch: one round trip for many).
# Sequence numbers keep the requests of an origin in the order they were held.
# Everything that can fail runs before the first request is written (a script that
# fails half-way keeps what it wrote): an origin's held key of another type than a hash
# (something else wrote there) is deleted first. Returns the origin keys so cleared.
_HOLD = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return redis.error_reply('REP9309GENERATION Redis lost its data')
end
local cleared = {}
local seen = {}
for i = 4, #ARGV, 3 do
  if not seen[ARGV[i]] then
    seen[ARGV[i]] = true
    local held = ARGV[2] .. ':held:' .. ARGV[i]
    local kind = redis.call('TYPE', held).ok
    if kind ~= 'hash' and kind ~= 'none' then
      redis.call('DEL', held)
      cleared[#cleared + 1] = ARGV[i]
    end
    redis.call('SADD', KEYS[3], ARGV[i])
  end
end
redis.call('SADD', KEYS[2], ARGV[3])
local count = (#ARGV - 3) / 3
local seq = redis.call('INCRBY', KEYS[4], count) - count
for i = 4, #ARGV, 3 do
  seq = seq + 1
  redis.call('HSET', ARGV[2] .. ':held:' .. ARGV[i], ARGV[i + 1], seq .. ' ' .. ARGV[i + 2])
end
return cleared
"""

# KEYS: held, generation, receipt, holders, receipts:<me>, receipting. ARGV: generation,
# prefix, origin key, me, entry ids (none: all). Returns id, value, id, value... A held
# key of another type than a hash (something else wrote there) is deleted: the answer is
# FOREIGN_HELD alone. The receipt is listed under <me> until ``handed_over`` drops it.
# A receipt that exists already is a repeat after a lost reply: its requests are
# returned again, and a take of all also takes those held since.
_TAKE = (
    _GENERATION_CHECK
    + """
local kept = {}
if redis.call('EXISTS', KEYS[3]) == 1 then
  kept = redis.call('LRANGE', KEYS[3], 0, -1)
  if #ARGV > 4 then return kept end
end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then
  redis.call('DEL', KEYS[1])
  if #kept > 0 then return kept end
  return {'FOREIGN_HELD'}
end
local out = {}
if #ARGV == 4 then
  out = redis.call('HGETALL', KEYS[1])
  redis.call('DEL', KEYS[1])
else
  for i = 5, #ARGV do
    local value = redis.call('HGET', KEYS[1], ARGV[i])
    if value then
      out[#out + 1] = ARGV[i]
      out[#out + 1] = value
      redis.call('HDEL', KEYS[1], ARGV[i])
    end
  end
end
if #out == 0 then return kept end
for i = 1, #out, 128 do redis.call('RPUSH', KEYS[3], unpack(out, i, math.min(i + 127, #out))) end
for i = 5, 6 do
  local kind = redis.call('TYPE', KEYS[i]).ok
  if kind ~= 'set' and kind ~= 'none' then redis.call('DEL', KEYS[i]) end
end
redis.call('SADD', KEYS[5], KEYS[3] .. '\\n' .. ARGV[3])
redis.call('SADD', KEYS[6], ARGV[4])
local remaining = {}
for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
  remaining[string.match(id, '^[^:]+')] = true
end
for i = 1, #out, 2 do
  local owner = string.match(out[i], '^[^:]+')
  if not remaining[owner] then
    local holding = ARGV[2] .. ':holding:' .. owner
    redis.call('SREM', holding, ARGV[3])
    if redis.call('SCARD', holding) == 0 then redis.call('SREM', KEYS[4], owner) end
    remaining[owner] = true
  end
end
for i = 1, #out do kept[#kept + 1] = out[i] end
return kept
"""
)

# KEYS: holders, generation, receipt, holding:<me>, receipting. ARGV: generation, prefix,
# me, limit. Requests held by processes whose heartbeat is gone become ours (renamed
# <me>:<old id>), and so do those they had taken and not handed over (their receipts).
# Returns origin key, new id, value, ...
_ADOPT = (
    _GENERATION_CHECK
    + """
if redis.call('EXISTS', KEYS[3]) == 1 then return redis.call('LRANGE', KEYS[3], 0, -1) end
local out = {}
local count = 0
local limit = tonumber(ARGV[4])
for _, owner in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if owner ~= ARGV[3] and redis.call('EXISTS', ARGV[2] .. ':alive:' .. owner) == 0 then
    local holding = ARGV[2] .. ':holding:' .. owner
    for _, key in ipairs(redis.call('SMEMBERS', holding)) do
      if count >= limit then break end
      local held = ARGV[2] .. ':held:' .. key
      local mark = owner .. ':'
      local adopted = 0
      local ids = {}
      if redis.call('TYPE', held).ok == 'hash' then ids = redis.call('HKEYS', held) end
      for _, id in ipairs(ids) do
        if string.sub(id, 1, #mark) == mark then
          local value = redis.call('HGET', held, id)
          local new = ARGV[3] .. ':' .. id
          redis.call('HDEL', held, id)
          redis.call('HSET', held, new, value)
          out[#out + 1] = key
          out[#out + 1] = new
          out[#out + 1] = value
          count = count + 1
          adopted = adopted + 1
        end
      end
      redis.call('SREM', holding, key)
      if adopted > 0 then redis.call('SADD', KEYS[4], key) end
    end
    if redis.call('SCARD', holding) == 0 then redis.call('SREM', KEYS[1], owner) end
  end
end
local owners = {}
if redis.call('TYPE', KEYS[5]).ok == 'set' then owners = redis.call('SMEMBERS', KEYS[5]) end
for _, owner in ipairs(owners) do
  if owner ~= ARGV[3] and redis.call('EXISTS', ARGV[2] .. ':alive:' .. owner) == 0 then
    local receipts = ARGV[2] .. ':receipts:' .. owner
    local members = {}
    local kind = redis.call('TYPE', receipts).ok
    if kind == 'set' then
      members = redis.call('SMEMBERS', receipts)
    elseif kind ~= 'none' then
      redis.call('DEL', receipts)
    end
    for _, member in ipairs(members) do
      if count >= limit then break end
      local cut = string.find(member, '\\n', 1, true)
      if cut then
        local receipt = string.sub(member, 1, cut - 1)
        local key = string.sub(member, cut + 1)
        local held = ARGV[2] .. ':held:' .. key
        local kind = redis.call('TYPE', held).ok
        if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', held) end
        local taken = {}
        if redis.call('TYPE', receipt).ok == 'list' then
          taken = redis.call('LRANGE', receipt, 0, -1)
        end
        for i = 1, #taken - 1, 2 do
          local new = ARGV[3] .. ':' .. taken[i]
          redis.call('HSET', held, new, taken[i + 1])
          out[#out + 1] = key
          out[#out + 1] = new
          out[#out + 1] = taken[i + 1]
          count = count + 1
        end
        if #taken > 1 then redis.call('SADD', KEYS[4], key) end
        redis.call('DEL', receipt)
      end
      redis.call('SREM', receipts, member)
    end
    if redis.call('SCARD', receipts) == 0 then redis.call('SREM', KEYS[5], owner) end
  end
end
if #out > 0 then
  redis.call('SADD', KEYS[1], ARGV[3])
  for i = 1, #out, 128 do
    redis.call('RPUSH', KEYS[3], unpack(out, i, math.min(i + 127, #out)))
  end
  redis.call('PEXPIRE', KEYS[3], RECEIPT_MS)
end
return out
"""
)

# KEYS: generation, version, seq, holders, receipting. Deletes those holding another
# Redis type than this store writes there, and counters that are not whole numbers
# (something else wrote there): every call using them would fail until then. Returns
# their names.
_REPAIR = """
local wanted = {'string', 'string', 'string', 'set', 'set'}
local out = {}
for i, key in ipairs(KEYS) do
  local kind = redis.call('TYPE', key).ok
  local bad = kind ~= 'none' and kind ~= wanted[i]
  if not bad and (i == 2 or i == 3) and kind == 'string' then
    bad = not string.match(redis.call('GET', key), '^%-?%d+$')
  end
  if bad then
    redis.call('DEL', key)
    out[#out + 1] = key
  end
end
return out
"""

_TAKE = _TAKE.replace("RECEIPT_MS", str(int(RECEIPT_TTL * 1000))).replace(
    "FOREIGN_HELD", FOREIGN_HELD.decode()
)
_ADOPT = _ADOPT.replace("RECEIPT_MS", str(int(RECEIPT_TTL * 1000)))


class RedisOriginStore:
    """Origin records, fetch leases and held requests in Redis, shared by a fleet.

    ``shared`` tells the driver that other processes use the same store: it then
    takes every request held for an origin when it releases them, leaves its held
    requests here when the spider closes, and adopts those of processes that are gone.
    """

    shared = True

    def __init__(
        self,
        url: str,
        timing: RecordTiming,
        *,
        prefix: str = DEFAULT_PREFIX,
        max_size: int = DEFAULT_MAX_SIZE,
        stats: Any = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self._timing = timing
        self._max_size = max_size
        self._stats = stats
        #: This process among those sharing the store (held requests, heartbeat).
        self.me = uuid.uuid4().hex
        self._redis: aioredis.Redis | None = None
        self._codec: RequestCodec | None = None
        self._on_change: ChangeCallback = _ignore
        self._generation: bytes | None = None
        #: Our held requests as written: origin key -> entry id -> (token, value).
        self._mine: dict[str, dict[str, tuple[Hashable, bytes]]] = {}
        #: Those not written yet (Redis was down, or lost them): (origin key, entry id).
        self._unwritten: set[tuple[str, str]] = set()
        #: Our held requests themselves, by entry id: taken back without decoding them.
        self._live: dict[str, Any] = {}
        #: Entries being written by ``hold`` right now (a take-all leaves them alone).
        self._inflight: set[tuple[str, str]] = set()
        #: Held requests whose write has not left this process yet (a connection for it
        #: is being made): ``withdraw_unwritten`` may still give them up for sure.
        self._unsent: set[tuple[str, str]] = set()
        #: Requests being held right now, written together by ``_write_batches``.
        self._batch: list[tuple[str, str, bytes, asyncio.Future[None]]] = []
        self._batch_writer: asyncio.Future[None] | None = None
        #: Takes asked for right now, sent together by ``_take_batches``.
        self._takes: list[_Take] = []
        #: Receipts (``receipt key\norigin key``) of the takes answered and returned to
        #: their caller, until the requests they took are handed over (``handed_over``);
        #: and of those answered, not returned yet (``close`` drops both).
        self._receipts: list[str] = []
        self._unreturned_receipts: set[str] = set()
        #: Receipts whose drop Redis did not answer: the heartbeat tries again.
        self._failed_drops: list[str] = []
        #: Set once ``close`` dropped the receipts: a take answered later drops its own.
        self._receipts_dropped = False
        #: (origin key, entry ids or None for all) -> the receipt key of a take of them
        #: whose reply was lost: Redis may have carried it out, so the caller's repeat
        #: takes under the same receipt and gets what the first took.
        self._unanswered_takes: dict[tuple[str, tuple[str, ...] | None], str] = {}
        #: Commands asked for in this moment, sent in one pipeline by ``_send_outgoing``.
        self._outgoing: list[tuple[tuple[Any, ...], asyncio.Future[Any]]] = []
        self._sending = False
        self._senders: set[asyncio.Future[None]] = set()
        self._taker: asyncio.Future[None] | None = None
        #: Held while writing what waits here, taking and adopting: never two at once.
        self._writing = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._scripts: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<RedisStore {redact(self.url)} prefix {self.prefix!r}>"

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # -- connection --------------------------------------------------------------------

    async def open(self, codec: RequestCodec, on_change: ChangeCallback) -> None:
        """Connect, announce this process and listen for records others store.

        Never raises for an unreachable Redis (start-up reachability is checked
        before, in ``from_crawler``): until it answers, calls raise StoreUnavailable
        and held requests wait in this process.
        """
        self._codec = codec
        self._on_change = on_change
        # A bounded pool that makes callers wait for a connection: a burst of held
        # requests must queue up, not open a connection each (or fail with "too many").
        pool = aioredis.BlockingConnectionPool.from_url(
            self.url,
            max_connections=MAX_CONNECTIONS,
            timeout=5,
            socket_timeout=5,
            socket_connect_timeout=2,
            retry=Retry(NoBackoff(), 1),
        )
        self._redis = aioredis.Redis(connection_pool=pool)
        self._scripts = {
            name: self._redis.register_script(source)
            for name, source in (
                ("save", _SAVE),
                ("load", _LOAD),
                ("load_or_lease", _LOAD_OR_LEASE),
                ("drop", _DROP),
                ("renew", _RENEW),
                ("release", _RELEASE),
                ("hold", _HOLD),
                ("take", _TAKE),
                ("adopt", _ADOPT),
                ("repair", _REPAIR),
            )
        }
        try:
            await self._beat()
        except (RedisError, OSError) as exc:
            logger.debug("Redis at %s not reachable yet: %s", redact(self.url), exc)
        self._tasks = [
            asyncio.ensure_future(self._heartbeat_loop()),
            asyncio.ensure_future(self._listen()),
        ]

    async def close(self) -> None:
        """Write what still waits here, say goodbye (others adopt our held requests at
        once) and disconnect. Held requests stay in Redis for the other processes."""
        self._closing = True
        redis = self._redis
        if redis is None:
            return
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        try:
            # Every take answered by now is handed over, left to the fleet or ended by
            # the crawl (one answering late too): its receipt goes, whether or not the
            # heartbeat below gets through. One still unanswered leaves its receipt to
            # the fleet, as a take never answered leaves its requests.
            if self._taker is not None:
                await asyncio.wait({self._taker}, timeout=CLOSE_FLUSH_TIMEOUT)
            members = [*self._receipts, *self._unreturned_receipts, *self._failed_drops]
            self._receipts, self._failed_drops = [], []
            self._unreturned_receipts.clear()
            self._receipts_dropped = True
            await asyncio.wait_for(self._drop_receipts(members, leaving=True), CLOSE_FLUSH_TIMEOUT)
        except (RedisError, OSError, StoreUnavailable, asyncio.TimeoutError) as exc:
            logger.debug("Closing the Redis store: %s", exc)
        try:
            await asyncio.wait_for(self._beat(), CLOSE_FLUSH_TIMEOUT)
            await redis.delete(self._key("alive", self.me))
        except (RedisError, OSError, StoreUnavailable, asyncio.TimeoutError) as exc:
            logger.debug("Closing the Redis store: %s", exc)
        if self._unwritten:
            logger.error(
                "%d held requests left to the fleet were not confirmed written to Redis at "
                "%s before closing (it stopped answering): unless Redis carries out the "
                "writes it was sent, they are lost to the fleet",
                len(self._unwritten),
                redact(self.url),
            )
        await redis.aclose(close_connection_pool=True)  # a pool passed in stays open otherwise

    async def _heartbeat_loop(self) -> None:
        while not self._closing:
            await asyncio.sleep(HEARTBEAT_INTERVAL)
            try:
                await self._beat()
            except (RedisError, OSError, StoreUnavailable) as exc:
                logger.debug("Redis heartbeat failed: %s", exc)

    async def _beat(self) -> None:
        """Say we are alive; write again what Redis lost, or never got while it was down.
        First, delete the store's own keys that something else overwrote with another
        type (a WARNING each): calls that use them fail until then."""
        redis = self._redis
        assert redis is not None
        keys = ["generation", "version", "seq", "holders", "receipting"]
        for deleted in await self._scripts["repair"](keys=[self._key(key) for key in keys]):
            logger.warning(
                "Deleted %s in Redis (%s): it held another Redis type or value than this "
                "store writes there",
                deleted.decode(),
                redact(self.url),
            )
            if self._stats is not None:
                self._stats.inc_value(CORRUPT_STAT)
        if self._failed_drops:  # the sooner the better: peers may adopt them otherwise
            members, self._failed_drops = self._failed_drops, []
            await self._drop_receipts(members)
        async with redis.pipeline(transaction=False) as pipe:
            pipe.set(self._key("alive", self.me), str(os.getpid()), px=_ms(ALIVE_TTL))
            pipe.get(self._key("generation"))
            _, generation = await pipe.execute()
        if generation is None or generation != self._generation:
            async with self._writing:
                await self._resync()
        elif self._unwritten:
            async with self._writing:
                await self._flush()

    async def _resync(self) -> None:
        """Redis lost its data (or we never saw it): agree on a new generation and write
        every request we hold again. Called with ``_writing`` held."""
        redis = self._redis
        assert redis is not None
        await redis.set(self._key("generation"), uuid.uuid4().hex, nx=True)
        generation = await redis.get(self._key("generation"))
        if self._generation is not None and generation != self._generation:
            logger.warning(
                "Redis at %s lost its data: writing the %d held requests of this process "
                "again; robots.txt records will be fetched again",
                redact(self.url),
                sum(len(entries) for entries in self._mine.values()),
            )
        self._generation = generation
        self._unwritten.update(
            (key, entry) for key, entries in self._mine.items() for entry in entries
        )
        await self._flush()

    async def _flush(self) -> None:
        """Write the held requests that wait in this process, oldest first. Called with
        ``_writing`` held, so that nothing takes them meanwhile."""
        waiting = sorted(self._unwritten, key=lambda item: _order(item[1]))
        for start in range(0, len(waiting), HOLD_BATCH):
            batch = [
                (key, entry, self._mine[key][entry][1])
                for key, entry in waiting[start : start + HOLD_BATCH]
                if entry in self._mine.get(key, {})
            ]
            if batch:
                try:
                    await self._write_held(batch)
                except HoldWithdrawn:
                    return  # the spider is closing: what waits here is its own to end
            self._unwritten.difference_update(waiting[start : start + HOLD_BATCH])

    async def _listen(self) -> None:
        """Tell the driver about records other processes stored (within a second).

        What is published while the subscription is down is lost, so each subscription
        after the first (made here after an error, or by redis-py when it reconnects)
        tells the driver to read every record it uses again (``EVERY_RECORD``): a
        process must not go on deciding by a copy a peer replaced meanwhile."""
        channel = self._key("changes")
        subscribed_before = False
        while not self._closing:
            redis = self._redis
            assert redis is not None
            pubsub = _Subscription(redis.connection_pool, ignore_subscribe_messages=True)
            pubsub.on_lost_changes = self._missed_changes
            try:
                await pubsub.subscribe(channel)
                if subscribed_before:
                    self._missed_changes()
                subscribed_before = True
                while not self._closing:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        self._changed(message["data"])
            except (RedisError, OSError) as exc:
                logger.debug("Redis subscription lost: %s", exc)
                await asyncio.sleep(HEARTBEAT_INTERVAL)
            finally:
                try:
                    await pubsub.aclose()
                except (RedisError, OSError):
                    pass

    async def _eval_when_connected(
        self, script: str, keys: list[str], args: list[Any], entries: list[tuple[str, str]]
    ) -> Any:
        """EVAL ``script`` once a connection is ready, unless ``entries`` were withdrawn
        meanwhile (then nothing is sent: HoldWithdrawn)."""
        assert self._redis is not None
        pool = self._redis.connection_pool
        connection = await (
            pool.get_connection("EVAL") if _GET_CONNECTION_NEEDS_NAME else pool.get_connection()
        )
        try:
            if any(entry not in self._unsent for entry in entries):
                raise HoldWithdrawn("withdrawn before it was sent")
            self._unsent.difference_update(entries)  # from here on, it may be carried out
            await connection.send_command("EVAL", script, len(keys), *keys, *args)
            return await connection.read_response()
        except BaseException:
            await connection.disconnect()
            raise
        finally:
            await pool.release(connection)

    def _missed_changes(self) -> None:
        logger.info(
            "The subscription to robots.txt changes at %s was lost for a while: every "
            "record in use is read again",
            redact(self.url),
        )
        self._on_change(EVERY_RECORD)

    def _changed(self, data: bytes) -> None:
        owner, _, key = data.decode("utf-8", "replace").partition(" ")
        if owner != self.me and key:
            self._on_change(key)

    async def _call(self, call: Callable[[], Awaitable[_T]]) -> _T:
        """Run one Redis call; an unreachable Redis is StoreUnavailable."""
        if self._redis is None:
            raise StoreUnavailable("the Redis store is not open")
        try:
            return await call()
        except (RedisError, OSError) as exc:
            if isinstance(exc, ResponseError) and str(exc).startswith(_GENERATION_ERROR):
                self._generation = None
                raise _GenerationLost(f"Redis at {redact(self.url)} lost its data") from exc
            if isinstance(exc, ResponseError) and str(exc).startswith(_WRONG_TYPE_ERROR):
                raise _WrongType(str(exc)) from exc
            raise StoreUnavailable(f"Redis at {redact(self.url)}: {exc}") from exc

    async def _script(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """Run a script that writes held requests: only within the generation we know."""
        generation = self._known_generation()
        return await self._call(
            lambda: self._scripts[name](keys=list(keys), args=[generation, *args])
        )

    def _known_generation(self) -> bytes:
        """The generation held requests are written in; _GenerationLost before we know it."""
        if self._generation is None:
            raise _GenerationLost(f"Redis at {redact(self.url)} not in step yet")
        return self._generation

    async def _pipelined_in_step(
        self, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Script calls that write held requests, in one pipelined round trip; like
        ``_script_in_step``, our held requests are written again first if Redis lost its
        data (every call of the batch then failed before doing anything)."""
        try:
            return await self._call(lambda: self._pipelined(calls))
        except _GenerationLost:
            await self._call(self._resync)
            return await self._call(lambda: self._pipelined(calls))

    async def _pipelined(
        self, calls: Sequence[tuple[str, Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        generation = self._known_generation()
        replies = await asyncio.gather(
            *(self._evalsha(name, keys, [generation, *args]) for name, keys, args in calls),
            return_exceptions=True,
        )
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        return replies

    def _evalsha(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Awaitable[Any]:
        """A script call, sent with the other commands of this moment (``_send``)."""
        return self._send("EVALSHA", self._scripts[name].sha, len(keys), *keys, *args)

    def _send(self, *command: Any) -> asyncio.Future[Any]:
        """One command, sent with every other asked for in the same moment in one
        pipelined round trip: the loads, leases, saves and takes of a burst of new
        origins each wait one round trip, not their turn for a pooled connection."""
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._outgoing.append((command, reply))
        if not self._sending:
            self._sending = True
            sender = asyncio.ensure_future(self._send_outgoing())
            self._senders.add(sender)
            sender.add_done_callback(self._senders.discard)
        return reply

    async def _send_outgoing(self) -> None:
        await asyncio.sleep(0)  # let the commands asked for in this moment join
        outgoing, self._outgoing = self._outgoing, []
        self._sending = False  # commands asked for from now on go in the next pipeline
        try:
            replies = await self._pipeline([command for command, _ in outgoing])
        except BaseException as exc:
            for _, reply in outgoing:
                if not reply.done():
                    reply.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            for (_, reply), answer in zip(outgoing, replies, strict=True):
                if reply.done():
                    continue
                if isinstance(answer, Exception):
                    reply.set_exception(answer)
                else:
                    reply.set_result(answer)

    async def _pipeline(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Replies (or errors) of ``commands``, sent in one round trip; scripts Redis does
        not know (it restarted) are loaded and their calls sent again."""
        redis = self._redis
        if redis is None:
            raise StoreUnavailable("the Redis store is not open")
        async with redis.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            replies = await pipe.execute(raise_on_error=False)
        unknown = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if unknown:
            sources = {script.sha: script.script for script in self._scripts.values()}
            for sha in {commands[i][1] for i in unknown}:
                await redis.script_load(sources[sha])
            again = await self._pipeline([commands[i] for i in unknown])
            for i, reply in zip(unknown, again, strict=True):
                replies[i] = reply
        return replies

    async def _script_in_step(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """``_script`` that first writes our held requests again if Redis lost its data.
        Called with ``_writing`` held (taking and adopting)."""
        try:
            return await self._script(name, keys, args)
        except _GenerationLost:
            await self._call(self._resync)
            return await self._script(name, keys, args)

    # -- records -------------------------------------------------------------------------

    async def load(self, key: str) -> StoredRecord | None:
        limit = self._max_size + HEADER_LIMIT
        answer = await self._reading(
            key, lambda: self._evalsha("load", [self._key("record", key)], [limit])
        )
        return await self._stored_record(key, answer, limit)

    async def _reading(self, key: str, call: Callable[[], Awaitable[_T]]) -> _T:
        """Run a script that reads ``key``'s record (and lease). A key there of another
        Redis type (not written by this store: a record is a hash, a lease a string)
        makes Redis refuse the script; each such key is deleted with a WARNING, counted
        corrupt, and the script runs again, so that the origin is fetched anew instead of
        the refusal being taken for an outage and retried for ever."""
        try:
            return await self._call(call)
        except _WrongType:
            redis = self._redis
            assert redis is not None  # _call raised, not "not open"
            for name, expected in (("record", b"hash"), ("lease", b"string")):
                full_key = self._key(name, key)
                kind = await self._call(functools.partial(redis.type, full_key))
                if kind not in (expected, b"none"):
                    self._ignored(key, f"its {name} key holds a Redis {kind.decode()}")
                    await self._call(functools.partial(redis.delete, full_key))
            return await self._call(call)

    def _foreign_held_key_deleted(self, key: str) -> None:
        """A script met ``key``'s held-requests key holding another Redis type than the
        hash this store writes (something else wrote there), and deleted it."""
        logger.warning(
            "Ignoring the held requests of %s in Redis (%s): its key held another Redis "
            "type, not requests; deleted",
            key,
            redact(self.url),
        )
        if self._stats is not None:
            self._stats.inc_value(UNREADABLE_HELD_STAT)

    def _ignored(self, key: str, why: str) -> None:
        logger.warning(
            "Ignoring the robots.txt record of %s in Redis (%s): unreadable (%s); "
            "it will be fetched again",
            key,
            redact(self.url),
            why,
        )
        if self._stats is not None:
            self._stats.inc_value(CORRUPT_STAT)

    async def load_or_lease(
        self, key: str, owner: str, ttl: float
    ) -> tuple[StoredRecord | None, bool | None]:
        """``load``, and when Redis has no record, ``acquire_lease`` in the same script:
        ``(record, None)``, or ``(None, granted)``. A new origin costs one round trip
        before its fetch instead of three (load, lease, load again in case a peer
        stored the answer in between: taken with the look, the lease needs no second
        look)."""
        limit = self._max_size + HEADER_LIMIT
        answer = await self._reading(
            key,
            lambda: self._evalsha(
                "load_or_lease",
                [self._key("record", key), self._key("lease", key)],
                [limit, owner, _ms(ttl)],
            ),
        )
        if answer and answer[0] == b"":
            return None, bool(answer[1])
        return await self._stored_record(key, answer, limit), None

    async def _stored_record(self, key: str, answer: Any, limit: int) -> StoredRecord | None:
        """The record of a load script's answer; an unreadable one is dropped (WARNING)."""
        if not answer:
            return None
        written_version = answer[0]  # dropped only if still this one, whatever it reads
        try:
            version = int(written_version)
            if len(answer) < 3:
                raise ValueError(f"{int(answer[1])} bytes, more than the {limit} read")
            record = decode_record(answer[2])
        except (ValueError, TypeError, KeyError, RecursionError, ArithmeticError) as exc:
            # RecursionError: JSON nested deeper than the parser goes, in a short header.
            self._ignored(key, str(exc) or type(exc).__name__)
            await self._call(
                lambda: self._evalsha("drop", [self._key("record", key)], [written_version])
            )
            return None
        return StoredRecord(record, version)

    async def save(self, key: str, record: OriginRecord, expected: int | None) -> int | None:
        data = encode_record(record)
        ttl = _ms(max(1.0, self.useful_until(record) - time.time()))
        version = await self._call(
            lambda: self._evalsha(
                "save",
                [self._key("record", key), self._key("version")],
                [
                    "" if expected is None else expected,
                    data,
                    ttl,
                    self._key("changes"),
                    f"{self.me} {key}",
                ],
            )
        )
        return None if version is None else int(version)

    def useful_until(self, record: OriginRecord) -> float:
        """Until when a record may be of use: its TTL and stale period; a backoff is kept
        a retry period past its retry, so consecutive failures keep doubling it."""
        until = record.expires_at + self._timing.stale_ttl
        if record.failures:
            until = max(until, record.retry_at + self._timing.retry_max_delay)
        return until

    # -- leases ----------------------------------------------------------------------------

    async def acquire_lease(self, key: str, owner: str, ttl: float) -> bool:
        lease = self._key("lease", key)
        if await self._call(lambda: self._send("SET", lease, owner, "NX", "PX", _ms(ttl))):
            return True
        return await self.renew_lease(key, owner, ttl)  # ours already?

    async def renew_lease(self, key: str, owner: str, ttl: float) -> bool:
        renewed = await self._call(
            lambda: self._evalsha("renew", [self._key("lease", key)], [owner, _ms(ttl)])
        )
        return bool(renewed)

    async def release_lease(self, key: str, owner: str) -> None:
        await self._call(lambda: self._evalsha("release", [self._key("lease", key)], [owner]))

    # -- held requests -----------------------------------------------------------------------

    async def hold(self, key: str, held: HeldRequest) -> None:
        """Write ``held``; while Redis is unreachable it waits in this process instead.

        Requests held in the same moment (a burst of new origins) are written together,
        in one round trip, so that the loads and leases that decide them do not queue
        up behind one write each."""
        assert self._codec is not None
        try:
            encoded = self._codec.encode(held.request)
        except Exception as exc:
            raise UnencodableRequest(f"{type(exc).__name__}: {exc}") from exc
        entry = self._entry_id(held.token)
        value = b"%.3f %s" % (held.deadline, encoded)
        self._mine.setdefault(key, {})[entry] = (held.token, value)
        self._live[entry] = held.request
        self._inflight.add((key, entry))
        written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._batch.append((key, entry, value, written))
        if self._batch_writer is None:
            self._batch_writer = asyncio.ensure_future(self._write_batches())
        try:
            await written
        except HoldWithdrawn:
            raise  # never sent, and never will be (``withdraw_unwritten``)
        except StoreUnavailable as exc:
            logger.debug("Holding %s in this process until Redis answers: %s", entry, exc)
            self._unwritten.add((key, entry))
        finally:
            self._inflight.discard((key, entry))

    async def withdraw_unwritten(self) -> list[Hashable]:
        """Give up the held requests still waiting in this process for Redis to answer
        (it was down): they will not be written, and their tokens are returned for the
        caller to decide them itself. At close, so that none is counted as left to the
        fleet while no peer can see it. Writes not sent yet are given up too (still
        queued behind one Redis has not answered, or waiting for a connection, which
        Redis does not answer): never sent, they never will be. A write sent and not
        answered is not: Redis may still carry it out."""
        queued, self._batch = self._batch, []
        for key, entry, _, written in queued:
            self._unwritten.add((key, entry))
            if not written.done():
                written.set_exception(HoldWithdrawn("withdrawn before it was sent"))
        # Their writer sees them gone once it has a connection, and sends nothing.
        self._unwritten.update(self._unsent)
        self._unsent.clear()
        tokens = []
        for key, entry in sorted(self._unwritten, key=lambda item: _order(item[1])):
            mine = self._mine.get(key, {})
            if entry in mine:
                tokens.append(mine.pop(entry)[0])
                if not mine:
                    del self._mine[key]
            self._live.pop(entry, None)
        self._unwritten.clear()
        return tokens

    async def _write_batches(self) -> None:
        try:
            await asyncio.sleep(0)  # let the requests held in this moment join
            while self._batch:
                batch, self._batch = self._batch[:HOLD_BATCH], self._batch[HOLD_BATCH:]
                triples = [(key, entry, value) for key, entry, value, _ in batch]
                try:
                    await self._write_held(triples)
                except Exception as exc:  # StoreUnavailable: the request waits in the process
                    for *_, written in batch:
                        if not written.done():
                            written.set_exception(exc)
                else:
                    for *_, written in batch:
                        if not written.done():
                            written.set_result(None)
        finally:
            self._batch_writer = None

    async def _write_held(self, batch: list[tuple[str, str, bytes]]) -> None:
        """Write (origin key, entry id, value) triples in one script call.

        Sent on a connection taken (and connected) first, so that this process knows
        whether the write left it: until it did, ``withdraw_unwritten`` can give it up
        for sure. (A connection opened while Redis is stalled waits for Redis's answer
        to its set-up commands; the write itself would never be sent, yet looked sent.)"""
        entries = [(key, entry) for key, entry, _ in batch]
        self._unsent.update(entries)
        try:
            generation = self._known_generation()
            keys = [
                self._key("generation"),
                self._key("holders"),
                self._key("holding", self.me),
                self._key("seq"),
            ]
            args = [
                generation,
                self.prefix,
                self.me,
                *(part for triple in batch for part in triple),
            ]
            cleared = await self._call(
                lambda: self._eval_when_connected(_HOLD, keys, args, entries)
            )
        finally:
            self._unsent.difference_update(entries)
        for key in cleared:
            self._foreign_held_key_deleted(key.decode())

    async def take_held(
        self, key: str, tokens: Sequence[Hashable] | None = None
    ) -> list[HeldRequest]:
        """Remove and return held requests of ``key``: those of ``tokens``, or every one
        held for it by any process (what the process releasing them does).

        Takes asked for in the same moment (the answers of many origins arriving
        together) go to Redis together, one round trip for all: released requests
        must not wait in line for one round trip per origin."""
        taken: asyncio.Future[tuple[list[HeldRequest], str | None]] = (
            asyncio.get_running_loop().create_future()
        )
        self._takes.append((key, tokens, taken))
        if self._taker is None:
            self._taker = asyncio.ensure_future(self._take_batches())
        requests, receipt = await taken
        if receipt is not None and not self._receipts_dropped:
            # Returned now: the caller queues them for its engine before anything else
            # runs, so the next ``handed_over`` (after the engine took its queue) may drop
            # this receipt; one answered but not returned yet to its caller stays.
            self._unreturned_receipts.discard(receipt)
            self._receipts.append(receipt)
        return requests

    async def _take_batches(self) -> None:
        batch: list[_Take] = []
        try:
            await asyncio.sleep(0)  # let the takes asked for in this moment join
            while self._takes:
                batch, self._takes = self._takes[:TAKE_BATCH], self._takes[TAKE_BATCH:]
                try:
                    async with self._writing:
                        answers = await self._take_many([(key, tokens) for key, tokens, _ in batch])
                except Exception as exc:
                    for *_, taken in batch:
                        if not taken.done():
                            taken.set_exception(exc)
                else:
                    for (*_, taken), answer in zip(batch, answers, strict=True):
                        if not taken.done():
                            taken.set_result(answer)
                batch = []
        finally:
            self._taker = None
            for *_, taken in (*batch, *self._takes):  # cancelled (closing): nobody waits
                if not taken.done():
                    taken.cancel()
            self._takes = []

    async def _take_many(
        self, asked: list[tuple[str, Sequence[Hashable] | None]]
    ) -> list[list[HeldRequest]]:
        """The takes of ``asked`` in one pipelined round trip (with ``_writing`` held):
        what waits in this process is taken here, the rest by one script call each."""
        plans = []
        calls = []
        receipts: list[str] = []
        asked_for: list[tuple[str, tuple[str, ...] | None]] = []
        for key, tokens in asked:
            mine = self._mine.get(key, {})
            if tokens is None:
                wanted = [entry for entry in mine if (key, entry) not in self._inflight]
            else:
                wanted = [self._entry_id(token) for token in tokens]
            local = [entry for entry in wanted if (key, entry) in self._unwritten]
            call = None
            if tokens is None or len(local) < len(wanted):
                remote = () if tokens is None else [e for e in wanted if e not in local]
                call = len(calls)
                asked_for.append((key, None if tokens is None else tuple(remote)))
                receipt = self._unanswered_takes.pop(asked_for[-1], None) or self._key(
                    "receipt", uuid.uuid4().hex
                )
                calls.append(
                    (
                        "take",
                        [
                            self._key("held", key),
                            self._key("generation"),
                            receipt,
                            self._key("holders"),
                            self._key("receipts", self.me),
                            self._key("receipting"),
                        ],
                        [self.prefix, key, self.me, *remote],
                    )
                )
                receipts.append(f"{receipt}\n{key}")
            plans.append((key, wanted, local, call))
        try:
            replies = await self._pipelined_in_step(calls) if calls else []
        except StoreUnavailable:
            for what, receipt in zip(asked_for, receipts, strict=True):
                self._unanswered_takes[what] = receipt.partition("\n")[0]
            raise
        if self._receipts_dropped:  # answered after close dropped ours: its caller ends them
            self._drop_late_receipts(receipts)
        else:
            self._unreturned_receipts.update(receipts)
        answers: list[tuple[list[HeldRequest], str | None]] = []
        for key, wanted, local, call in plans:
            mine = self._mine.get(key, {})
            pairs: list[bytes] = [] if call is None else replies[call]
            if pairs == [FOREIGN_HELD]:
                self._foreign_held_key_deleted(key)
                pairs = []
            taken = [
                (entry.decode(), value)
                for entry, value in zip(pairs[::2], pairs[1::2], strict=True)
            ]
            for entry in local:
                self._unwritten.discard((key, entry))
                taken.append((entry, b"%d %s" % (_LOCAL_ORDER + _order(entry), mine[entry][1])))
            live = {entry: self._live.pop(entry) for entry in wanted if entry in self._live}
            for entry in wanted:  # taken now, or by another process before
                mine.pop(entry, None)
            if not mine:
                self._mine.pop(key, None)
            receipt = None if call is None else receipts[call]
            answers.append((self._decode_held(key, taken, live), receipt))
        return answers

    def handed_over(self) -> Awaitable[None]:
        """The requests of every take returned so far are with the engine now (scheduled,
        or sent to their errback): their receipts, which stood for them in case this
        process was killed first, are dropped. Which ones is read when called, not when
        awaited: a take returned in between may have its requests still in the driver's
        queue. Best effort: a drop Redis does not answer is tried again by the heartbeat."""
        members, self._receipts = self._receipts, []
        return self._drop_receipts(members)

    async def _drop_receipts(self, members: list[str], *, leaving: bool = False) -> None:
        """Drop the receipts ``members``; kept for the heartbeat to try again if Redis does
        not answer. ``leaving`` (the store closes): also leave ``receipting`` if no
        receipt of ours is left."""
        redis = self._redis
        if redis is None or not (members or leaving):
            return
        keys = [member.split("\n", 1)[0] for member in members]
        mine = self._key("receipts", self.me)

        async def drop() -> None:
            async with redis.pipeline(transaction=False) as pipe:
                if members:
                    pipe.srem(mine, *members)
                    pipe.delete(*keys)
                pipe.scard(mine)
                left = (await pipe.execute())[-1]
            if leaving and not left:
                await redis.srem(self._key("receipting"), self.me)

        try:
            await self._call(drop)
        except (StoreUnavailable, _WrongType) as exc:
            logger.debug("Receipts of taken requests not dropped yet: %s", exc)
            self._failed_drops.extend(members)

    def _drop_late_receipts(self, members: list[str]) -> None:
        task = asyncio.ensure_future(self._drop_receipts(members))
        self._senders.add(task)
        task.add_done_callback(self._senders.discard)

    async def adopt_orphans(self) -> list[tuple[str, HeldRequest]]:
        """Make this process the holder of the requests held by processes that are gone;
        returns them (origin key, request) with their original deadlines, in order."""
        async with self._writing:
            flat = await self._script_in_step(
                "adopt",
                [
                    self._key("holders"),
                    self._key("generation"),
                    self._key("receipt", uuid.uuid4().hex),
                    self._key("holding", self.me),
                    self._key("receipting"),
                ],
                [self.prefix, self.me, ADOPT_LIMIT],
            )
            by_key: dict[str, list[tuple[str, bytes]]] = {}
            for raw_key, raw_entry, value in zip(flat[::3], flat[1::3], flat[2::3], strict=True):
                by_key.setdefault(raw_key.decode(), []).append((raw_entry.decode(), value))
            adopted = []
            for key, pairs in by_key.items():
                # An entry that does not read back is dropped (WARNING, counted), out of
                # Redis too; the others are ours now, whatever it was.
                values = dict(pairs)
                readable = self._decode_held(key, pairs)  # adopted: token == entry id
                for held in readable:
                    entry = str(held.token)
                    self._mine.setdefault(key, {})[entry] = (entry, values[entry].split(b" ", 1)[1])
                    adopted.append((key, held))
                unreadable = set(values) - {str(held.token) for held in readable}
                if unreadable:
                    await self._drop_held_entries(key, unreadable)
        return adopted

    async def _drop_held_entries(self, key: str, entries: set[str]) -> None:
        """Best effort: the adopted requests are returned whatever happens here (a take
        drops what is left, counted again)."""
        redis = self._redis
        if redis is None:
            return
        try:
            await self._call(functools.partial(redis.hdel, self._key("held", key), *entries))
        except Exception as exc:
            logger.debug("Could not delete unreadable held requests of %s: %s", key, exc)

    def _entry_id(self, token: Hashable) -> str:
        """Entry ids of our requests: ``<me>:<driver token>``; adopted ones keep theirs."""
        if isinstance(token, str) and token.startswith(f"{self.me}:"):
            return token
        return f"{self.me}:{token}"

    def _token_of(self, entry: str) -> Hashable:
        """The driver's token of one of our entries (an int), else the entry id."""
        owner, _, rest = entry.partition(":")
        if owner == self.me and rest.isdigit():
            return int(rest)
        return entry

    def _decode_held(
        self, key: str, pairs: list[tuple[str, bytes]], live: dict[str, Any] | None = None
    ) -> list[HeldRequest]:
        """Held requests from ``<seq> <deadline> <request>`` values, oldest first.

        Our own entries carry the driver's token again, and the request object itself
        when this process still has it (``live``); others' carry their entry id and are
        decoded. A request that no longer decodes (a spider without that callback, bytes
        that are no request) is dropped with a WARNING and counted: it was taken out of
        Redis with the others, so it cannot come back on every read.
        """
        assert self._codec is not None
        live = live or {}
        decoded = []
        for entry, value in pairs:
            try:
                seq, deadline_text, data = value.split(b" ", 2)
                deadline = float(deadline_text)
                if not math.isfinite(deadline):  # NaN or infinity: held forever
                    raise ValueError(f"deadline {deadline_text!r}")
                request = live[entry] if entry in live else self._codec.decode(data)
                held = HeldRequest(self._token_of(entry), deadline, request)
                decoded.append((int(seq), held))
            except Exception as exc:
                logger.warning(
                    "Dropped a request held for %s in Redis (%s) that cannot be read back "
                    "(%s: %s); it reaches no errback",
                    key,
                    redact(self.url),
                    type(exc).__name__,
                    exc,
                )
                if self._stats is not None:
                    self._stats.inc_value(UNREADABLE_HELD_STAT)
        decoded.sort(key=lambda item: item[0])
        return [held for _, held in decoded]


def encode_record(record: OriginRecord) -> bytes:
    """A header line (JSON, without the body) and the body, as stored in Redis."""
    header = {
        "outcome": record.outcome,
        "status": record.status,
        "fetched_at": record.fetched_at,
        "expires_at": record.expires_at,
        "failures": record.failures,
        "retry_at": record.retry_at,
        "last_failure": None
        if record.last_failure is None
        else record.last_failure[:FAILURE_LIMIT],
    }
    if record.redirected_to is not None and len(record.redirected_to) <= REDIRECT_LIMIT:
        header["redirected_to"] = record.redirected_to
    header["truncated"] = record.truncated  # absent: a record of an earlier version
    return json.dumps(header, separators=(",", ":")).encode() + b"\n" + record.body


def decode_record(data: bytes) -> OriginRecord:
    """The record ``encode_record`` wrote; ValueError (or TypeError) for anything else."""
    if not isinstance(data, bytes):  # a hash with a version and no data field
        raise ValueError("no data")
    line, newline, body = data.partition(b"\n")
    if not newline or len(line) > HEADER_LIMIT:
        raise ValueError("no header line")
    header = json.loads(line)
    if not isinstance(header, dict):
        raise ValueError("not a robots.txt record")
    return OriginRecord.from_fields(header, body)


class _WrongType(Exception):
    """Redis refused a command: one of its keys holds another type than this store
    writes there. Not an outage (retrying cannot help): ``_reading`` deletes the key."""


class _GenerationLost(StoreUnavailable):
    """Redis lost its data since we last wrote held requests (or we never wrote any)."""


class _Subscription(PubSub):
    """redis-py's subscription, saying when it reconnected: redis-py subscribes again on
    its own, and what was published while it was down is lost."""

    on_lost_changes: Callable[[], None] | None = None

    async def on_connect(self, connection: Any) -> None:
        await super().on_connect(connection)
        if self.channels and self.on_lost_changes is not None:  # subscribed before
            self.on_lost_changes()


def redact(url: str) -> str:
    """The URL without its password, for logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + netloc))


def _order(entry: str) -> int:
    """The driver's token in an entry id: the order requests were held in here."""
    tail = entry.rsplit(":", 1)[-1]
    return int(tail) if tail.isdigit() else 0


#: Requests that waited in this process come after those Redis had (sequence numbers).
_LOCAL_ORDER = 2**53


#: The longest expiry given to Redis (100 years, in seconds): a longer one (a
#: REP9309_CACHE_TTL of 1e20) is refused by Redis as an invalid expire time.
_MAX_EXPIRY = 100 * 365 * 86400.0


def _ms(seconds: float) -> int:
    return max(1, int(min(seconds, _MAX_EXPIRY) * 1000))


def _ignore(key: str) -> None:
    """The change callback before ``open``."""
