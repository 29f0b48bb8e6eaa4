package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.ManualClock;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.master.Command.ReplicaList;

/**
 * A durable leader renews the read leases of keys read under a held lease that ran short (under 3/8 of a TTL) together,
 * ahead, so that a key read on and on never needs a read-lease entry of its own; the renewal is state, in the log.
 * Virtual time on the master; the leader's housekeeping round is called directly.
 */
class ReadRenewalsTest {
    private static final DurableLog.Settings NO_SNAPSHOTS = new DurableLog.Settings(1_000_000, false, 60_000);
    private static final long TTL = MasterConfig.defaults().leaseTtl().toNanos();
    /** What is left of a lease when a held read of it offers the key. */
    private static final long OFFERED_UNDER = TTL / 8 * ReadRenewals.OFFER_EIGHTHS;

    @TempDir
    Path dir;

    private final ManualClock clock = new ManualClock();

    @Test
    void keysReadUnderAShortHeldLeaseAreRenewedTogetherAndTheirNextReadsNeedNoEntry() throws Exception {
        DurableLog log = open();
        // renewing as a group's leader does (a master alone does not: see the next test)
        try (StoreMaster master = new StoreMaster(log, clock, true)) {
            master.apply(new Command.Mount("node", new SegmentSpec("node-mem", "node-engine", "h", 1L << 40, 1 << 20), 7L));
            for (String key : List.of("a", "b", "c", "gone")) {
                Command.PutTicket t = master.putStart("node", key, 4096, ReplicateConfig.defaults(), "h");
                master.putEnd("node", key, t.putId());
                master.getReplicas(key); // a fresh lease: a full TTL from now
            }
            List<Command<?>> applied = new CopyOnWriteArrayList<>();
            log.state().journal(e -> applied.add(e.command()));

            // a read under a held lease with more than 3/8 of a TTL left: nothing offered
            clock.advance(Duration.ofNanos(TTL - OFFERED_UNDER - 1_000_000));
            assertNotNull(held(master, "a"));
            master.housekeep();
            assertEquals(List.of(), renewals(applied), "no short lease was read");

            // a and "gone" are read under what is left (under 3/8, over a quarter): offered; c is not read
            clock.advance(Duration.ofMillis(2));
            assertNotNull(held(master, "a"));
            assertNotNull(held(master, "gone"));
            master.remove("gone", true);
            long leaseOfC = record(log, "c").lease;
            master.housekeep();
            assertEquals(List.of(List.of("a", "gone")), renewals(applied).stream().map(r -> r.keys().stream().sorted().toList()).toList(),
                    "one entry renews every key offered");
            long now = log.state().lastAppliedTime();
            assertEquals(now + TTL, record(log, "a").lease, "a holds a full TTL from the renewal");
            assertEquals(leaseOfC, record(log, "c").lease, "a key nobody read keeps its lease");
            assertEquals(1, log.metrics().renewalEntries(), "renewal entries counted");
            assertEquals(1, log.metrics().renewedAhead(), "a renewed; gone was removed before its renewal");
            StringBuilder prom = new StringBuilder();
            log.metrics().appendPrometheus(prom);
            assertTrue(prom.toString().contains("\nstore_read_renewal_entries_total 1\n")
                    && prom.toString().contains("\nstore_read_leases_renewed_ahead_total 1\n"), prom.toString());

            // where a would have needed a read-lease entry (under a quarter of the first lease), it is still held
            clock.advance(Duration.ofNanos(OFFERED_UNDER - TTL / 4 + 1_000_000));
            long entries = log.entriesApplied();
            ReplicaList a = held(master, "a");
            assertNotNull(a, "a's renewed lease holds");
            assertTrue(a.leaseTtl().toNanos() > TTL / 2, "what is left of the renewed lease: " + a.leaseTtl());
            assertEquals(entries, log.entriesApplied(), "the read made no entry");
            assertTrue(applied.stream().noneMatch(c -> c instanceof Command.GrantRead), "no read-lease entry: " + applied);

            // nothing offered since: the next round renews nothing
            master.housekeep();
            assertEquals(1, renewals(applied).size(), "a round with nothing offered proposes no renewal");
            assertEquals(1, log.metrics().renewalEntries(), "a round with nothing offered counts nothing");
        }

        // the renewal is in the log: a restart gives a the same lease
        long before = record(log, "a").lease;
        try (DurableLog again = open()) {
            assertEquals(before, record(again, "a").lease, "a's renewed lease after a restart");
        }
    }

    /** A master alone takes a read-lease entry per short read, as before: only that master pays for it. */
    @Test
    void aMasterAloneRenewsNothingAhead() throws Exception {
        DurableLog log = open();
        try (StoreMaster master = new StoreMaster(log, clock)) {
            assertTrue(!log.inGroup());
            master.apply(new Command.Mount("node", new SegmentSpec("node-mem", "node-engine", "h", 1L << 40, 1 << 20), 7L));
            Command.PutTicket t = master.putStart("node", "a", 4096, ReplicateConfig.defaults(), "h");
            master.putEnd("node", "a", t.putId());
            master.getReplicas("a");
            List<Command<?>> applied = new CopyOnWriteArrayList<>();
            log.state().journal(e -> applied.add(e.command()));
            clock.advance(Duration.ofNanos(TTL - OFFERED_UNDER + 1_000_000));
            assertNotNull(held(master, "a"));
            master.housekeep();
            assertEquals(List.of(), renewals(applied), "a master alone renewed ahead");
            assertEquals(0, log.metrics().renewalEntries());
        }
    }

    @Test
    void aRenewalSkipsKeysGoneStillBeingWrittenOrTooLong() {
        MasterState state = new MasterState(MasterConfig.defaults());
        state.apply(0, new Command.Mount("node", new SegmentSpec("node-mem", "node-engine", "h", 1L << 40, 1 << 20), 7L));
        Command.PutTicket done = state.apply(0, new Command.PutStart("node", "done", 4096, ReplicateConfig.defaults(), "h", false, 1));
        state.apply(0, new Command.PutEnd("node", "done", done.putId()));
        state.apply(0, new Command.PutStart("node", "writing", 4096, ReplicateConfig.defaults(), "h", false, 2));
        String tooLong = "k".repeat(MasterConfig.defaults().maxKeyBytes() + 1);
        long now = TimeUnit.SECONDS.toNanos(100);
        int renewed = state.apply(now, new Command.RenewReads(List.of("done", "writing", "missing", tooLong)));
        assertEquals(1, renewed, "only the complete object is renewed");
        assertEquals(now + TTL, state.objects.shard("done").map.get("done").lease);
    }

    @Test
    void aRoundRenewsInBoundedCommandsAtMostOncePerPeriod() {
        ReadRenewals renewals = new ReadRenewals(MasterConfig.defaults());
        for (int i = 0; i <= ReadRenewals.COMMAND_KEYS; i++) {
            renewals.read("k" + i, OFFERED_UNDER - 1);
        }
        renewals.read("k0", OFFERED_UNDER - 1); // offered twice, renewed once
        renewals.read("long", OFFERED_UNDER); // not short yet
        List<Command.RenewReads> round = renewals.due(0);
        assertEquals(List.of(ReadRenewals.COMMAND_KEYS, 1), round.stream().map(c -> c.keys().size()).toList());
        renewals.read("again", OFFERED_UNDER - 1);
        assertEquals(List.of(), renewals.due(TTL / ReadRenewals.PERIOD_PARTS - 1), "a round within the period");
        assertEquals(List.of(List.of("again")), renewals.due(TTL / ReadRenewals.PERIOD_PARTS).stream()
                .map(Command.RenewReads::keys).toList());
        renewals.read("lost", OFFERED_UNDER - 1);
        renewals.clear();
        assertEquals(List.of(), renewals.due(TTL), "a master that stopped leading keeps nothing");
    }

    private DurableLog open() throws IOException {
        return DurableLog.open(MasterConfig.defaults(), dir, "m1", List.of(), NO_SNAPSHOTS);
    }

    /** The key's replicas under its held lease, through the durable read path; null when it would need an entry. */
    private static ReplicaList held(StoreMaster master, String key) throws Exception {
        Function<String, ReplicaList> reads = master.heldReads(List.of(key)).get(10, TimeUnit.SECONDS);
        return reads.apply(key);
    }

    private static List<Command.RenewReads> renewals(List<Command<?>> applied) {
        return applied.stream().filter(c -> c instanceof Command.RenewReads).map(c -> (Command.RenewReads) c).toList();
    }

    private static ObjectRecord record(DurableLog log, String key) {
        return log.state().objects.shard(key).map.get(key);
    }
}
