package org.tent4j.store.client;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.rpc.MasterClient;

/**
 * Keeps this client alive at the master: pings on a schedule (with the read counters since the last one), registers
 * again when the master no longer knows the credential, and then remounts what this client contributes and drops the
 * reservations the master released with it.
 */
final class Heartbeats {
    private static final Logger LOG = LoggerFactory.getLogger(Heartbeats.class);
    private final ReplicaAccess access;
    private final MasterClient master;
    private final Contributions contributions;
    private final ReservedPuts reserved;
    /** Null when the interval is zero (tests drive {@link #beat}). */
    private final ScheduledExecutorService scheduler;
    private final long intervalMillis;
    private long reportedLeaseExpiries;
    private long reportedChecksumFailures;

    private volatile boolean stopped;

    Heartbeats(ReplicaAccess access, Contributions contributions, ReservedPuts reserved, Duration interval) {
        this.access = access;
        this.master = access.master;
        this.contributions = contributions;
        this.reserved = reserved;
        this.intervalMillis = interval.toMillis();
        if (interval.isZero()) {
            scheduler = null;
        } else {
            scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "store-client-heartbeat");
                t.setDaemon(true);
                return t;
            });
        }
    }

    /** Starts the schedule; only once the client has its id: a ping needs it, and one that threw would end the schedule. */
    void start() {
        if (scheduler != null) {
            scheduler.scheduleWithFixedDelay(this::beat, intervalMillis, intervalMillis, TimeUnit.MILLISECONDS);
        }
    }

    /**
     * Stops the schedule and ends a ping in flight: one answered after the leave would remount what was withdrawn. That
     * ping fails (its thread interrupted), and so may a later one; neither is a warning, the client is leaving.
     */
    void stop() {
        stopped = true;
        if (scheduler != null) {
            scheduler.shutdownNow();
            try {
                scheduler.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** One ping; never throws (thrown out of a scheduled task it would end the heartbeats silently). */
    void beat() {
        try {
            long expired = access.leaseExpiredReads.sum();
            long asked = access.clock.nanoTime();
            long mismatched = access.checksumFailures.sum();
            boolean remount;
            try {
                remount = master.ping(access.id(), expired - reportedLeaseExpiries, mismatched - reportedChecksumFailures);
            } catch (StoreException e) {
                if (e.error() != StoreError.ILLEGAL_CLIENT) {
                    throw e;
                }
                String old = access.id();
                access.id(master.register());
                LOG.warn("master {} no longer knows client {} ({}); registered again as {}", master.address(), old,
                        e.getMessage(), access.id());
                remount = true;
            }
            reportedLeaseExpiries = expired;
            reportedChecksumFailures = mismatched;
            if (remount) {
                // the master released this client's reservations with it
                reserved.forgetAll();
                contributions.remount();
            } else {
                reserved.masterHeard(asked);
            }
        } catch (StoreException e) {
            if (stopped) {
                LOG.debug("heartbeat to master {} ended by the client's close: {}", master.address(), e.getMessage());
            } else {
                LOG.warn("heartbeat to master {} failed: {}", master.address(), e.getMessage());
            }
        } catch (RuntimeException e) {
            // thrown out of a scheduled task it would end the heartbeats silently, and the master would expire us
            LOG.error("heartbeat to master {} failed", master.address(), e);
        }
    }
}
