package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.store.master.MasterGroup.APPLIED;
import static org.tent4j.store.master.MasterGroup.OBJECTS;
import static org.tent4j.store.master.MasterGroup.TERM;
import static org.tent4j.store.master.MasterGroup.number;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.Outcome;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.testkit.Poll;

/**
 * SIGKILL with real processes: a group of three {@link DurableMasterProcess} JVMs (shared by both cases, so that they
 * start once), nodes and clients in this JVM, each with an engine of its own. First the leader is killed under a
 * put/get load of two clients and started again; then every master is killed at once and all are started again.
 * Each case brings its own nodes and closes them, so their segments leave the group's state with them.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MasterGroupKillTest {
    /** From the kill to the first put acknowledged that was made after it: what the issue asks of a failover. */
    private static final long FAILOVER_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(5);
    private static final int PUTS_EACH_SIDE = 50;
    private static final int FILL_BYTES = 16 << 10;

    private MasterGroup group;

    @BeforeAll
    void startGroup(@TempDir Path dir) throws Exception {
        group = MasterGroup.start(dir);
    }

    @AfterAll
    void killGroup() throws InterruptedException {
        if (group != null) {
            group.close();
        }
    }

    @Test
    @Order(1)
    void theLeaderKilledUnderLoadLosesNoAcknowledgedPut() throws Exception {
        group.restartDead();
        group.awaitLeader(-1, 0);
        List<TransferEngine> engines = new ArrayList<>();
        List<StoreClient> clients = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        List<PutGetLoad> loads = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                StoreClient node = StoreClient.builder(DurableValues.engine(engines), group.rpc())
                        .heartbeatInterval(Duration.ofMillis(200)).connect();
                clients.add(node);
                node.contribute(4 << 20);
            }
            for (int i = 0; i < 2; i++) {
                StoreClient user = StoreClient.builder(DurableValues.engine(engines), group.rpc()).stagingBytes(1 << 20)
                        .rpcTimeout(Duration.ofSeconds(5)).connect();
                clients.add(user);
                PutGetLoad load = new PutGetLoad(user, "load" + i + "/", 7000 + i, 4096);
                loads.add(load);
                threads.add(Thread.ofPlatform().name("put-get-load-" + i).start(load));
            }
            Poll.until("each client has " + PUTS_EACH_SIDE + " puts acknowledged", Duration.ofSeconds(60),
                    Duration.ofMillis(20), () -> loads.stream().allMatch(l -> l.acknowledged() >= PUTS_EACH_SIDE));

            // the leader now: leadership may have moved since the group started
            int leader = group.awaitLeader(-1, 0);
            long term = number(TERM, group.health(leader));
            long killed = System.nanoTime();
            group.kill(leader);
            int[] before = loads.stream().mapToInt(PutGetLoad::acknowledged).toArray();
            Poll.until("each client has " + PUTS_EACH_SIDE + " more puts acknowledged after the kill",
                    Duration.ofSeconds(60), Duration.ofMillis(20), () -> loads.get(0).acknowledged() >= before[0] + PUTS_EACH_SIDE
                            && loads.get(1).acknowledged() >= before[1] + PUTS_EACH_SIDE);
            loads.forEach(PutGetLoad::stop);
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(30));
                assertTrue(!t.isAlive(), t.getName() + " did not end within 30 s of being stopped");
            }

            long firstAfter = Long.MAX_VALUE;
            for (PutGetLoad load : loads) {
                load.assertNothingWrong();
                for (PutGetLoad.Put p : load.puts()) {
                    if (p.acknowledged() && p.startNanos() > killed) {
                        firstAfter = Math.min(firstAfter, p.ackNanos() - killed);
                    }
                }
            }
            assertTrue(firstAfter <= FAILOVER_LIMIT_NANOS, "the first put made after the leader's SIGKILL was "
                    + "acknowledged " + TimeUnit.NANOSECONDS.toMillis(firstAfter) + " ms after it (limit 5,000 ms)");
            int newLeader = group.awaitLeader(leader, term);
            assertNotEquals(leader, newLeader);
            for (int i = 0; i < loads.size(); i++) {
                loads.get(i).assertReadBack(clients.get(3 + i));
            }

            // the killed master, started again on its dir and ports, catches up with the leader from its log tail
            group.restart(leader);
            long objects = number(OBJECTS, group.health(newLeader));
            long applied = number(APPLIED, group.metrics(newLeader));
            Poll.until("master #" + leader + ", started again, has the leader's " + objects + " objects and applied"
                    + " index " + applied, Duration.ofSeconds(20), Duration.ofMillis(50), () -> {
                        String h = group.health(leader);
                        String m = group.metrics(leader);
                        return h != null && m != null && h.contains("\"role\":\"follower\"")
                                && number(OBJECTS, h) == objects && number(APPLIED, m) >= applied;
                    });
        } finally {
            // a failed assertion leaves the loads running: they must not outlive their clients
            loads.forEach(PutGetLoad::stop);
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            clients.reversed().forEach(StoreClient::close);
            engines.forEach(TransferEngine::close);
        }
    }

    @Test
    @Order(2)
    void everyMasterKilledAtOnceKeepsEveryObjectAndHandsNoMemoryOutTwice() throws Exception {
        group.restartDead();
        group.awaitLeader(-1, 0);
        List<TransferEngine> engines = new ArrayList<>();
        List<StoreClient> clients = new ArrayList<>();
        try {
            long capacity = 0;
            for (int i = 0; i < 3; i++) {
                StoreClient node = StoreClient.builder(DurableValues.engine(engines), group.rpc())
                        .heartbeatInterval(Duration.ofMillis(200)).connect();
                clients.add(node);
                capacity += node.contribute(1 << 20).size();
            }
            StoreClient user = StoreClient.builder(DurableValues.engine(engines), group.rpc()).stagingBytes(1 << 20)
                    .rpcTimeout(Duration.ofSeconds(5)).connect();
            clients.add(user);
            // hard-pinned: the fill below can then only find room that is free, never evict the old objects
            ReplicateConfig pinned = ReplicateConfig.replicas(1).withHardPin();
            List<byte[]> old = values(40, 9001, 32 << 10);
            long oldBytes = putAll(user, "old/", old, pinned);

            for (int i = 0; i < 3; i++) {
                group.kill(i);
            }
            group.restartDead();
            group.awaitLeader(-1, 0);
            assertCrcEqual(user, keys("old/", old.size()), old);

            // fill what is left, in batches: each new value must land in memory no old object holds
            List<String> freshKeys = new ArrayList<>();
            List<byte[]> fresh = new ArrayList<>();
            Random rnd = new Random(9002);
            for (int b = 0, full = 0; full == 0; b++) {
                List<String> keys = new ArrayList<>();
                List<byte[]> batch = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    byte[] v = new byte[FILL_BYTES];
                    rnd.nextBytes(v);
                    keys.add("new/" + b + "/" + i);
                    batch.add(v);
                }
                List<Outcome<PutResult>> out = user.putBatch(keys, batch, pinned);
                for (int i = 0; i < out.size(); i++) {
                    if (out.get(i).ok()) {
                        assertEquals(PutResult.Status.STORED, out.get(i).value().status(), keys.get(i));
                        freshKeys.add(keys.get(i));
                        fresh.add(batch.get(i));
                    } else {
                        assertEquals(StoreError.NO_AVAILABLE_HANDLE, out.get(i).error().error(), out.get(i).error().toString());
                        full++;
                    }
                }
            }
            long freshBytes = RangeAllocator.aligned(FILL_BYTES) * fresh.size();
            assertTrue(oldBytes + freshBytes <= capacity, oldBytes + " old and " + freshBytes
                    + " new bytes in " + capacity + " contributed: some handed out twice");
            assertTrue(oldBytes + freshBytes > capacity - 3 * RangeAllocator.aligned(FILL_BYTES) - 3 * (32 << 10),
                    "the fill stopped early: " + oldBytes + " old and " + freshBytes + " new bytes in " + capacity);
            assertCrcEqual(user, keys("old/", old.size()), old);
            assertCrcEqual(user, freshKeys, fresh);
        } finally {
            clients.reversed().forEach(StoreClient::close);
            engines.forEach(TransferEngine::close);
        }
    }

    private static List<byte[]> values(int n, long seed, int maxBytes) {
        Random rnd = new Random(seed);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] v = new byte[1 + rnd.nextInt(maxBytes)];
            rnd.nextBytes(v);
            values.add(v);
        }
        return values;
    }

    /** Puts each value, acknowledged STORED; the bytes they take in the segments. */
    private static long putAll(StoreClient user, String prefix, List<byte[]> values, ReplicateConfig config) {
        long bytes = 0;
        for (int i = 0; i < values.size(); i++) {
            assertEquals(PutResult.Status.STORED, user.put(prefix + i, values.get(i), config).status(), prefix + i);
            bytes += RangeAllocator.aligned(values.get(i).length);
        }
        return bytes;
    }

    private static List<String> keys(String prefix, int n) {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            keys.add(prefix + i);
        }
        return keys;
    }

    /** Each key holds its value: read in batches, length and CRC32C compared. */
    private static void assertCrcEqual(StoreClient user, List<String> keys, List<byte[]> values) {
        for (int from = 0; from < keys.size(); from += 64) {
            List<Outcome<byte[]>> got = user.getBatch(keys.subList(from, Math.min(keys.size(), from + 64)));
            for (int j = 0; j < got.size(); j++) {
                int i = from + j;
                assertTrue(got.get(j).ok(), keys.get(i) + ": " + got.get(j).error());
                assertEquals(values.get(i).length, got.get(j).value().length, keys.get(i) + ": length");
                assertEquals(PutGetLoad.crc(values.get(i)), PutGetLoad.crc(got.get(j).value()), keys.get(i) + ": CRC32C");
            }
        }
    }
}
