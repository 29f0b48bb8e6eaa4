package org.tent4j.transport.faulty;

import java.time.Duration;

import org.tent4j.api.ConfigException;
import org.tent4j.spi.OptionValues;

/**
 * The faults one faulty transport injects, from its {@code transports.faulty.*} options. Counts are of slices posted
 * on one connection; {@code -1} turns a fault off.
 */
record FaultPlan(String wraps, int paths, int failPercent, Duration delay, long failAfter, boolean corruptStatus,
                 long dropPeerAfter, int slowPath, long slowRate, int failPath, long failPathAfter, long seed) {

    static FaultPlan from(OptionValues o) {
        FaultPlan p = new FaultPlan(o.getString("wraps").strip(), o.getInt("paths"), o.getInt("fail_percent"),
                o.getDuration("delay"), o.getLong("fail_after"), o.getBoolean("corrupt_status"),
                o.getLong("drop_peer_after"), o.getInt("slow_path"), o.getSize("slow_rate"), o.getInt("fail_path"),
                o.getLong("fail_path_after"), o.getLong("seed"));
        if (p.paths < 0) {
            throw new ConfigException("transports.faulty.paths", "must be >= 0, got " + p.paths);
        }
        if (p.failPercent < 0 || p.failPercent > 100) {
            throw new ConfigException("transports.faulty.fail_percent", "must be in [0, 100], got " + p.failPercent);
        }
        if (p.delay.isNegative()) {
            throw new ConfigException("transports.faulty.delay", "must not be negative, got " + p.delay);
        }
        if (p.slowRate < 0) {
            throw new ConfigException("transports.faulty.slow_rate", "must be >= 0, got " + p.slowRate);
        }
        if (p.slowPath >= 0 && p.slowRate == 0) {
            throw new ConfigException("transports.faulty.slow_rate", "slow_path " + p.slowPath
                    + " needs a slow_rate in bytes per second");
        }
        if (p.failPathAfter < 0) {
            throw new ConfigException("transports.faulty.fail_path_after", "must be >= 0, got " + p.failPathAfter);
        }
        return p;
    }

    /** Whether completions of slices on {@code path} are held back to its rate. */
    boolean slows(int path) {
        return slowPath >= 0 && path == slowPath;
    }
}
