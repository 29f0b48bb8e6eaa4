package org.tent4j.runtime;

import java.time.Duration;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.runtime.config.CoreKey;
import org.tent4j.runtime.schedule.PathLimits;
import org.tent4j.runtime.schedule.PathState;
import org.tent4j.spi.OptionValues;

/** The core settings the parts are built with, read and range-checked once (each bad value names its key). */
record EngineSettings(int workers, long sliceSize, Duration transferTimeout, int maxBatch, int maxAttempts, PathLimits pathLimits,
                      boolean fallback, String machineId, String host, Duration metadataTtl, Duration awaitSpin) {
    static EngineSettings of(OptionValues core) {
        int workers = core.getInt(EngineConfig.WORKERS);
        if (workers < 0) {
            throw new ConfigException(EngineConfig.WORKERS, "must be >= 0, got " + workers);
        }
        long sliceSize = core.getSize(EngineConfig.SLICE_SIZE);
        if (sliceSize < 4096 || sliceSize > PathState.MAX_BYTES / 2) {
            throw new ConfigException(EngineConfig.SLICE_SIZE, "must be between 4k and " + PathState.MAX_BYTES / 2 + ", got " + sliceSize);
        }
        Duration transferTimeout = core.getDuration(EngineConfig.TRANSFER_TIMEOUT);
        if (transferTimeout.isNegative() || transferTimeout.isZero()) {
            throw new ConfigException(EngineConfig.TRANSFER_TIMEOUT, "must be positive");
        }
        Duration awaitSpin = core.getDuration(CoreKey.TRANSFER_AWAIT_SPIN);
        if (awaitSpin.isNegative() || awaitSpin.compareTo(Duration.ofMillis(1)) > 0) {
            throw new ConfigException(CoreKey.TRANSFER_AWAIT_SPIN, "must be between 0 and 1ms, got " + awaitSpin);
        }
        int maxInflight = core.getInt(CoreKey.PATHS_MAX_INFLIGHT);
        if (maxInflight < 1 || maxInflight > PathState.MAX_SLICES) {
            throw new ConfigException(CoreKey.PATHS_MAX_INFLIGHT, "must be between 1 and " + PathState.MAX_SLICES + ", got " + maxInflight);
        }
        long maxInflightBytes = core.getSize(CoreKey.PATHS_MAX_INFLIGHT_BYTES);
        if (maxInflightBytes < 1 || maxInflightBytes > PathState.MAX_BYTES / 2) {
            throw new ConfigException(CoreKey.PATHS_MAX_INFLIGHT_BYTES, "must be between 1 and " + PathState.MAX_BYTES / 2
                    + ", got " + maxInflightBytes);
        }
        long affinityBytes = core.getSize(CoreKey.PATHS_AFFINITY_BYTES);
        if (affinityBytes < 0) {
            throw new ConfigException(CoreKey.PATHS_AFFINITY_BYTES, "must be 0 (off) or more, got " + affinityBytes);
        }
        long cooldown = core.getDuration(CoreKey.PATHS_COOLDOWN).toNanos();
        PathLimits limits = new PathLimits(maxInflight, maxInflightBytes, affinityBytes,
                core.getDuration(CoreKey.QOS_AGING).toNanos(), cooldown,
                Math.max(cooldown, core.getDuration(CoreKey.PATHS_MAX_COOLDOWN).toNanos()));
        return new EngineSettings(workers == 0 ? Runtime.getRuntime().availableProcessors() : workers, sliceSize, transferTimeout,
                core.getInt(CoreKey.BATCH_MAX_CAPACITY), core.getInt(CoreKey.FAILOVER_MAX_ATTEMPTS), limits,
                core.getBoolean(EngineConfig.TRANSPORTS_FALLBACK), core.getString(CoreKey.MACHINE_ID),
                core.getString(EngineConfig.CONTROL_HOST), core.getDuration(CoreKey.METADATA_TTL), awaitSpin);
    }
}
