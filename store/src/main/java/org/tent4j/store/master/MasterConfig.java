package org.tent4j.store.master;

import java.time.Duration;

/**
 * The master's policies. Defaults are Mooncake Store's (mid-2026): 10 s read lease, 0.90 high watermark evicting 5% a
 * round, 30 min soft pin (24 h max), 10 s client TTL, abandoned puts taken over after 30 s and reclaimed after 600 s.
 * With a disk tier mounted, eviction from memory offloads to it ({@code offloadOnEvict}, on by default); an offload
 * not reported done within {@code offloadTimeout} (30 s) fails. An object read from disk {@code promoteAfterHits} times
 * within {@code promoteWindow} (zero, the default: no window, hits count since the object last left memory) is copied
 * back into memory (0 hits, the default: never). With {@code writeThrough} a put that does not say otherwise is copied
 * to its node's disk as soon as it ends, keeping its memory replica (off by default).
 */
public record MasterConfig(Duration leaseTtl, Duration defaultSoftPinTtl, Duration maxSoftPinTtl,
                           double highWatermark, double evictionRatio, Duration clientTtl,
                           Duration putDiscardTimeout, Duration putReleaseTimeout, Placement placement,
                           int maxKeyBytes, int maxReplicas, int shards, boolean offloadOnEvict,
                           Duration offloadTimeout, int promoteAfterHits, int repairsInFlight, int repairsPerNode,
                           boolean writeThrough, Duration promoteWindow) {

    /** The longest promotion window: a window's start is kept in 32 bits of milliseconds ({@code ObjectRecord.hitsSince}). */
    public static final Duration MAX_PROMOTE_WINDOW = Duration.ofDays(1);

    /** Without write-through or a promotion window (their defaults). */
    public MasterConfig(Duration leaseTtl, Duration defaultSoftPinTtl, Duration maxSoftPinTtl, double highWatermark,
                        double evictionRatio, Duration clientTtl, Duration putDiscardTimeout, Duration putReleaseTimeout,
                        Placement placement, int maxKeyBytes, int maxReplicas, int shards, boolean offloadOnEvict,
                        Duration offloadTimeout, int promoteAfterHits, int repairsInFlight, int repairsPerNode) {
        this(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl, putDiscardTimeout,
                putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict, offloadTimeout,
                promoteAfterHits, repairsInFlight, repairsPerNode, false, Duration.ZERO);
    }

    /** With the disk tier's defaults: offload on eviction, 30 s offload timeout. */
    public MasterConfig(Duration leaseTtl, Duration defaultSoftPinTtl, Duration maxSoftPinTtl, double highWatermark,
                        double evictionRatio, Duration clientTtl, Duration putDiscardTimeout, Duration putReleaseTimeout,
                        Placement placement, int maxKeyBytes, int maxReplicas, int shards) {
        this(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl, putDiscardTimeout,
                putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, true, Duration.ofSeconds(30), 0,
                DEFAULT_REPAIRS_IN_FLIGHT, DEFAULT_REPAIRS_PER_NODE);
    }

    /** Repairs in flight at once over the whole store, and per destination node: a dead node's objects are copied
     *  back at a bounded rate, so the copies do not crowd out the puts and gets the nodes serve meanwhile. */
    public static final int DEFAULT_REPAIRS_IN_FLIGHT = 64;
    public static final int DEFAULT_REPAIRS_PER_NODE = 8;

    public MasterConfig {
        if (!(highWatermark > 0 && highWatermark <= 1)) {
            throw new IllegalArgumentException("highWatermark must be in (0, 1]: " + highWatermark);
        }
        if (!(evictionRatio > 0 && evictionRatio <= 1)) {
            throw new IllegalArgumentException("evictionRatio must be in (0, 1]: " + evictionRatio);
        }
        if (offloadTimeout == null || offloadTimeout.isNegative() || offloadTimeout.isZero()) {
            throw new IllegalArgumentException("offloadTimeout must be positive: " + offloadTimeout);
        }
        if (promoteAfterHits < 0 || promoteAfterHits > 100) {
            throw new IllegalArgumentException("promoteAfterHits must be in [0, 100]: " + promoteAfterHits);
        }
        if (promoteWindow == null || promoteWindow.isNegative() || promoteWindow.compareTo(MAX_PROMOTE_WINDOW) > 0
                || (!promoteWindow.isZero() && promoteWindow.toMillis() == 0)) {
            // counted in milliseconds: a shorter window would read as none
            throw new IllegalArgumentException("promoteWindow (--promote-window) must be 0 (no window) or between 1 ms and "
                    + MAX_PROMOTE_WINDOW.toHours() + " h: " + promoteWindow);
        }
        if (repairsInFlight < 0 || repairsPerNode < 0) {
            throw new IllegalArgumentException("repairsInFlight and repairsPerNode must be >= 0 (0: no repair): "
                    + repairsInFlight + ", " + repairsPerNode);
        }
        if (Integer.bitCount(shards) != 1) {
            throw new IllegalArgumentException("shards must be a power of two: " + shards);
        }
    }

    public static MasterConfig defaults() {
        return new MasterConfig(Duration.ofSeconds(10), Duration.ofMinutes(30), Duration.ofHours(24), 0.90, 0.05,
                Duration.ofSeconds(10), Duration.ofSeconds(30), Duration.ofSeconds(600), Placement.RANDOM, 4096, 8, 1024);
    }

    /** Whether eviction from memory offloads to a disk tier (when one is mounted) instead of dropping. */
    public MasterConfig withOffloadOnEvict(boolean on) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, on, offloadTimeout, promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    public MasterConfig withOffloadTimeout(Duration timeout) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict, timeout, promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    /** Copies an object back into memory after this many reads from disk (0: never). */
    public MasterConfig withPromoteAfterHits(int hits) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict,
                offloadTimeout, hits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    public MasterConfig withPlacement(Placement p) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, p, maxKeyBytes, maxReplicas, shards, offloadOnEvict, offloadTimeout, promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    public MasterConfig withLeaseTtl(Duration ttl) {
        return new MasterConfig(ttl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict, offloadTimeout, promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    public MasterConfig withClientTtl(Duration ttl) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, ttl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict, offloadTimeout, promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    /** At most {@code inFlight} repairs at once, at most {@code perNode} of them copying to one node (0: no repair). */
    public MasterConfig withRepairLimits(int inFlight, int perNode) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict,
                offloadTimeout, promoteAfterHits, inFlight, perNode, writeThrough, promoteWindow);
    }

    /** Whether a put that does not say ({@code ReplicateConfig.writeThrough} null) is written through to disk. */
    public MasterConfig withWriteThrough(boolean on) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict,
                offloadTimeout, promoteAfterHits, repairsInFlight, repairsPerNode, on, promoteWindow);
    }

    /** Promotion counts only hits within this window of the first one counted (zero: no window). */
    public MasterConfig withPromoteWindow(Duration window) {
        return new MasterConfig(leaseTtl, defaultSoftPinTtl, maxSoftPinTtl, highWatermark, evictionRatio, clientTtl,
                putDiscardTimeout, putReleaseTimeout, placement, maxKeyBytes, maxReplicas, shards, offloadOnEvict,
                offloadTimeout, promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, window);
    }
}
