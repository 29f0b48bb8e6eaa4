package org.tent4j.store.master;

import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.PrintableId;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreException;
import org.tent4j.store.master.Command.ClientStatus;
import org.tent4j.store.master.Command.PutTicket;
import org.tent4j.store.master.Command.ReplicaList;
import org.tent4j.store.master.Command.TickReport;

/**
 * The metadata master, embeddable: a {@link MasterState} driven by a clock. Every mutating call (a read lease
 * included) builds a {@link Command}, reads the clock once, and hands both to the state's ordering point, which
 * numbers and applies it on this thread; {@link #exists} and {@link #size} change nothing and are read off it (on
 * a durable log only once Ratis confirmed this master leads: {@link #awaitReadable}).
 * {@link #startHousekeeping} ticks on a timer (without eviction) and evicts on its own thread, choosing victims off
 * the ordering point and taking them through it ({@link Command.EvictVictims}); tests call {@link #tick}, which
 * evicts too, themselves in virtual time.
 */
public final class StoreMaster implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StoreMaster.class);

    /** Null on a durable log: its state is replaced when a snapshot from the leader is installed, read it there. */
    private final MasterState state;
    private final StoreClock clock;
    /**
     * Added to {@link #clock} on a durable log, so that each time this master starts to lead, the state's time goes on
     * from its last applied entry's. The masters' monotonic clocks have unrelated origins (each machine's boot, and a
     * reboot starts again near 0): a leader's raw reading would jump the state's time ahead (every lease the last
     * leader granted ended at once, reads in progress unprotected, every reservation and put deadline passed) or hold
     * it at the last entry's for as long as this clock lags (nothing expires). The time between the last entry and
     * this master's lead is not counted: leases and deadlines run that much longer, never shorter.
     */
    private volatile long timeOffset;
    /** Null in memory: commands are applied on the caller's thread and nothing survives the process. */
    private final DurableLog log;
    /**
     * Null in memory, where every read grants its own lease, and on a master alone, where a read-lease entry costs only
     * that master (measured: renewing ahead there was slower, its large commands holding the ordering point).
     */
    private final ReadRenewals renewals;
    private ScheduledExecutorService housekeeping;
    /** The term whose clients got their grace (housekeeping thread only). */
    private long gracedTerm = -1;
    private Thread evictor;
    private final AtomicBoolean evictionWanted = new AtomicBoolean();
    private volatile boolean closed;

    public StoreMaster(MasterConfig config, StoreClock clock) {
        this(new MasterState(config), clock);
    }

    /** A master in memory over {@code state} (tests: a state with a small segment table). */
    StoreMaster(MasterState state, StoreClock clock) {
        this.state = state;
        this.clock = clock;
        this.log = null;
        this.renewals = null;
    }

    /**
     * A master whose commands go through {@code log}: each mutating call returns once its entry is committed and
     * applied. Closing the master closes the log.
     */
    public StoreMaster(DurableLog log, StoreClock clock) {
        this(log, clock, log.inGroup());
    }

    /** As above, renewing read leases ahead ({@link ReadRenewals}) or not (tests: a group of one that does). */
    StoreMaster(DurableLog log, StoreClock clock, boolean renewAhead) {
        this.state = null;
        this.clock = clock;
        this.log = log;
        this.renewals = renewAhead ? new ReadRenewals(log.state().config()) : null;
        goOnFromLastEntry();
        log.onLeading(this::goOnFromLastEntry);
    }

    private void goOnFromLastEntry() {
        MasterState s = log.state();
        // a state that applied nothing has no time to go on from: the clock's own reading starts it
        timeOffset = s.lastApplied() == 0 ? 0 : s.lastAppliedTime() - clock.nanoTime();
    }

    /**
     * The time commands are applied at: the clock's reading, on a durable log going on from the last entry applied
     * when this master started to lead (see {@link #timeOffset}).
     */
    public long now() {
        return clock.nanoTime() + timeOffset;
    }

    /** The Raft term this master is in (0 in memory): carried by every answer on the Calls stream. */
    public long term() {
        return log == null ? 0 : log.term();
    }

    /** The durable log commands go through; null in memory. */
    public DurableLog log() {
        return log;
    }

    /** Whether commands go through a durable log (and a call is answered only after its entry is committed). */
    public boolean durable() {
        return log != null;
    }

    public MasterState state() {
        return log == null ? state : log.state();
    }

    public <R> R apply(Command<R> command) {
        return log == null ? state.apply(clock.nanoTime(), command) : log.apply(now(), command);
    }

    /**
     * Applies a batch's commands in order, as one entry of the durable log (one group commit) when there is one; each
     * result is the command's result or the exception it was refused with. An entry not committed throws.
     */
    public List<Object> applyAll(List<Command<?>> commands) {
        if (log == null) {
            return state.applyAll(clock.nanoTime(), commands);
        }
        try {
            return submitAll(commands).join();
        } catch (java.util.concurrent.CompletionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : e;
        }
    }

    /**
     * {@link #applyAll} without waiting: completes, on the log's applier thread, once the entry is committed and
     * applied (or fails as {@link DurableLog#submit} says), so the calling thread can serve other calls meanwhile.
     */
    public java.util.concurrent.CompletableFuture<List<Object>> submitAll(List<Command<?>> commands) {
        if (log == null) {
            throw new IllegalStateException("submitAll is for a master on a durable log");
        }
        return log.submit(now(), commands);
    }

    /**
     * Runs a batch call's items holding the ordering point in memory, so they take consecutive indexes. With a durable
     * log each item is its own entry (the point is taken by the log's applier; holding it here would deadlock).
     */
    public <T> T inOrder(java.util.function.Supplier<T> work) {
        return log == null ? state().inOrder(work) : work.get();
    }

    public PutTicket putStart(String clientId, String key, long size, ReplicateConfig config, String writerHost) {
        return apply(new Command.PutStart(clientId, key, size, config, writerHost, false, ThreadLocalRandom.current().nextLong()));
    }

    public PutTicket upsertStart(String clientId, String key, long size, ReplicateConfig config, String writerHost) {
        return apply(new Command.PutStart(clientId, key, size, config, writerHost, true, ThreadLocalRandom.current().nextLong()));
    }

    public void putEnd(String clientId, String key, long putId) {
        apply(new Command.PutEnd(clientId, key, putId));
    }

    public void putRevoke(String clientId, String key, long putId) {
        apply(new Command.PutRevoke(clientId, key, putId));
    }

    public Command.CommitResult commit(String clientId, List<Command.CommitItem> items, List<Long> retire, Command.Reserve refill) {
        return apply(new Command.Commit(clientId, items, retire, refill, ThreadLocalRandom.current().nextLong()));
    }

    public ReplicaList getReplicas(String key) {
        return apply(new Command.GrantRead(key));
    }

    /**
     * Returns once this master may answer a read from its own state: at once in memory; on a durable log once Ratis
     * confirmed it leads ({@link DurableLog#awaitReadable}), else refused {@code NOT_LEADER}. Every read that is not
     * a log entry ({@link #exists}, {@link #size}, the disk tier's lists) makes this check first.
     */
    public void awaitReadable() {
        if (log != null) {
            log.awaitReadable();
        }
    }

    public boolean exists(String key) {
        awaitReadable();
        return state().exists(key);
    }

    /**
     * {@link #exists} for the keys of one batch call: the read check is made once, at the first key, and its outcome
     * (a refusal too) holds for the rest; the state only moves forward, so a later key still reads a state at or past
     * the confirmed one.
     */
    public java.util.function.Predicate<String> existsInBatch() {
        StoreException[] refused = new StoreException[1];
        boolean[] checked = new boolean[1];
        return key -> {
            if (!checked[0]) {
                checked[0] = true;
                try {
                    awaitReadable();
                } catch (StoreException e) {
                    refused[0] = e;
                }
            }
            if (refused[0] != null) {
                throw refused[0];
            }
            return state().exists(key);
        };
    }

    /**
     * For the keys of one call on a durable log (looked up together first, {@link MasterState#lookAhead}): each key's
     * replicas under the read lease it already holds when that runs at least a quarter of a lease TTL more
     * ({@link MasterState#heldRead}), answered without a log entry (in a group, a lease under 3/8 of a TTL is offered
     * to be renewed ahead, {@link ReadRenewals}); null for a key that needs one ({@link Command.GrantRead}).
     * Completes once the read check did ({@link DurableLog#readable}, never waited for on the calling thread: an
     * event loop); not confirmed, every key is null and takes the entry, which answers {@code NOT_LEADER} if this
     * master does not lead. In memory, at once, every key null: a lease costs nothing there, and granting it keeps
     * the object's place in the eviction order exact.
     */
    public java.util.concurrent.CompletableFuture<java.util.function.Function<String, ReplicaList>> heldReads(List<String> keys) {
        if (log == null) {
            return java.util.concurrent.CompletableFuture.completedFuture(key -> null);
        }
        return log.readable().thenApply(confirmed -> {
            if (!confirmed) {
                return key -> null;
            }
            state().lookAhead(keys);
            long now = now();
            return key -> {
                try {
                    ReplicaList held = state().heldRead(now, key);
                    if (held != null && renewals != null) {
                        renewals.read(key, held.leaseTtl().toNanos());
                    }
                    return held;
                } catch (StoreException badKey) {
                    // an invalid key: its GrantRead entry refuses it, as before
                    return null;
                }
            };
        });
    }

    public long size(String key) {
        awaitReadable();
        return state().size(key);
    }

    public void remove(String key, boolean force) {
        apply(new Command.Remove(key, force));
    }

    /**
     * Matches off the ordering point, then removes what matched as one command: a slow match holds up no other call,
     * and the log carries the keys. A key put after the match is not removed; one gone or in flight by then is skipped.
     */
    public int removeByRegex(String regex, boolean force) {
        return apply(removalByRegex(regex, force));
    }

    /** The command {@link #removeByRegex} applies: the keys matching now, matched on the calling thread. */
    public Command.RemoveKeys removalByRegex(String regex, boolean force) {
        return new Command.RemoveKeys(state().keysMatching(regex), force);
    }

    public int removeAll(boolean force) {
        return apply(new Command.RemoveAll(force));
    }

    /** Mounts {@code segment} for {@code clientId} in its {@code incarnation}: see {@link Command.Mount}. */
    public void mount(String clientId, SegmentSpec segment, long incarnation) {
        apply(new Command.Mount(clientId, segment, incarnation));
    }

    public void unmount(String clientId, String segmentId) {
        apply(new Command.Unmount(clientId, segmentId));
    }

    /** A client closing cleanly: see {@link Command.Leave}. */
    public void leave(String clientId) {
        apply(new Command.Leave(clientId));
    }

    public ClientStatus heartbeat(String clientId) {
        return apply(new Command.Heartbeat(clientId));
    }

    /**
     * The disk ranges freed on the client's disk segment after {@code freedAck}, and the offloads waiting for it, up to
     * {@code max}; none (and no command) if nothing waits.
     */
    public Command.DiskWork takeDiskWork(String clientId, int max, long freedAck) {
        // "nothing waits" is read off the log
        awaitReadable();
        boolean tasks = max > 0 && state().hasOffloadsFor(clientId);
        return tasks || state().hasFreedFor(clientId, freedAck)
                ? apply(new Command.TakeDiskWork(clientId, Math.max(0, max), freedAck)) : Command.DiskWork.NONE;
    }

    public void offloadDone(String clientId, List<Command.OffloadResult> results) {
        if (!results.isEmpty()) {
            apply(new Command.OffloadDone(clientId, results));
        }
    }

    /** The disk replicas on the client's disk segment, for its scrub. */
    public List<Command.DiskReplica> diskReplicas(String clientId, String segmentId, long from, int limit) {
        awaitReadable();
        return state().diskReplicas(clientId, segmentId, from, limit);
    }

    /** Drops disk replicas the client's scrub found corrupt; how many were still there. */
    public int dropDiskReplicas(String clientId, String segmentId, List<Command.DiskReplica> bad) {
        return bad.isEmpty() ? 0 : apply(new Command.DropDiskReplicas(clientId, segmentId, bad));
    }

    /** Adopts what a restarted node's disk index holds; the offsets refused. */
    public List<Long> adoptDiskReplicas(String clientId, String segmentId, List<Command.Adopted> held) {
        return held.isEmpty() ? List.of() : apply(new Command.AdoptDiskReplicas(clientId, segmentId, held));
    }

    public TickReport tick() {
        return apply(new Command.Tick());
    }

    public List<MasterState.SegmentView> segments() {
        return state().segments();
    }

    /**
     * One housekeeping round ({@link #startHousekeeping} runs them): nothing on a follower (the leader's ticks reach it
     * through the log, and its own would be refused); a leader's first round in a term first grants every client a
     * fresh TTL ({@link Command.Grace}), then ticks. Null when it did nothing.
     */
    TickReport housekeep() {
        state().objects.hotKeys.trim(); // a metric, off the ordering point; a follower serves reads too
        if (log != null) {
            DurableLog.Role role = log.role();
            if (!role.leader()) {
                if (renewals != null) {
                    renewals.clear();
                }
                return null;
            }
            if (role.term() != gracedTerm) {
                int clients = apply(new Command.Grace());
                gracedTerm = role.term();
                if (clients > 0) {
                    LOG.info("leading in term {}: the {} clients the log holds get a fresh {} to be heard from",
                            role.term(), clients, state().config().clientTtl());
                }
            }
            if (renewals != null) {
                for (Command.RenewReads renew : renewals.due(now())) {
                    log.metrics().renewedAhead(apply(renew));
                }
            }
        }
        // the evictor thread, started with housekeeping, evicts: the tick's own round would hold the ordering point
        TickReport r = apply(new Command.Tick(false));
        if (!r.clientsExpired().isEmpty() || r.putsReclaimed() > 0) {
            LOG.info("housekeeping: clients {} expired (their segments dropped), {} abandoned puts reclaimed",
                    r.clientsExpired().stream().map(PrintableId::forLog).toList(), r.putsReclaimed());
        }
        return r;
    }

    /** Runs housekeeping every {@code periodMillis} on a daemon thread (eviction is checked each time). */
    public synchronized void startHousekeeping(long periodMillis) {
        startHousekeeping(periodMillis, r -> { });
    }

    /** As {@link #startHousekeeping(long)}, also handing every round's report to {@code observer}. */
    public synchronized void startHousekeeping(long periodMillis, java.util.function.Consumer<TickReport> observer) {
        if (housekeeping != null) {
            return;
        }
        housekeeping = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "store-master-housekeeping");
            t.setDaemon(true);
            return t;
        });
        housekeeping.scheduleWithFixedDelay(() -> {
            try {
                TickReport r = housekeep();
                if (r != null) {
                    observer.accept(r);
                }
            } catch (RuntimeException e) {
                LOG.error("housekeeping failed", e);
            }
        }, periodMillis, periodMillis, TimeUnit.MILLISECONDS);
        startEvictor(observer);
    }

    /**
     * Evicts on its own thread as soon as usage passes the high watermark (the allocating call only sets a flag and
     * wakes it), so puts find room before allocations fail and no call's thread runs an eviction pass.
     */
    private void startEvictor(java.util.function.Consumer<TickReport> observer) {
        evictor = Thread.ofPlatform().daemon().name("store-master-evictor").unstarted(() -> {
            while (!closed) {
                // also over the mark with no allocation asking (a segment unmounted, leases run out); a follower evicts
                // what the leader's log says, nothing on its own
                boolean due = (evictionWanted.getAndSet(false) || state().overHighWatermark())
                        && (log == null || log.leads());
                Command.Evicted r = new Command.Evicted(0, 0);
                if (due) {
                    try {
                        // the victims are chosen off the ordering point: calls wait only while they are taken
                        Command.EvictVictims round = state().planEviction(now());
                        r = round.none() ? r : apply(round);
                    } catch (RuntimeException e) {
                        LOG.error("eviction failed", e);
                    }
                }
                if (r.objects() > 0) {
                    observer.accept(new TickReport(List.of(), 0, r.objects(), r.bytes()));
                } else {
                    // nothing asked, nothing evictable (leased, pinned, reserved, being offloaded), a follower, or a
                    // failure: the next allocation's wake-up or 100 ms, never a spin. A wake-up between the flag's
                    // check and the park leaves a permit, so the park returns at once
                    LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(100));
                }
            }
        });
        Thread t = evictor;
        state().onEvictionWanted(() -> {
            if (!evictionWanted.get() && !evictionWanted.getAndSet(true)) {
                LockSupport.unpark(t);
            }
        });
        t.start();
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (evictor != null) {
            state().onEvictionWanted(() -> { });
            LockSupport.unpark(evictor);
            evictor = null;
        }
        if (housekeeping != null) {
            housekeeping.shutdownNow();
            housekeeping = null;
        }
        if (log != null) {
            try {
                log.close();
            } catch (java.io.IOException e) {
                LOG.warn("closing the master's log failed", e);
            }
        }
    }
}
