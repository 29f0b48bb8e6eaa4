package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.cli.store.NodeProcess.okLong;
import static org.tent4j.cli.store.NodeProcess.okString;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.cli.Tent4jCommand;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.Wire;
import org.tent4j.testkit.ChildJvm;

/**
 * A master and three clients, each its own JVM, on loopback: values written by one client are read back by others
 * with matching CRCs, replicas sit on distinct segments, and a client killed with SIGKILL loses its segments after
 * the client TTL while reads go on from the surviving replicas. A `store node` stopped by SIGTERM leaves at once and is
 * never counted among expired clients; one killed beside it is.
 */
@Timeout(180)
class StoreProcessesTest {
    private static final int SIZE = 256 * 1024;
    private final List<AutoCloseable> closeLater = new ArrayList<>();
    private MasterProcess master;

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closeLater.reversed()) {
            c.close();
        }
        if (master != null) {
            master.close();
        }
    }

    @Test
    void threeClientProcessesShareValuesAndSurviveOneBeingKilled() throws Exception {
        master = new MasterProcess("--client-ttl", "4s", "--tick", "50ms", // 4 s: live clients on a loaded box never miss it
                "--repairs-in-flight", "0"); // what a death leaves, before repair (ReplicaRepairProcessesTest) adds to it
        String address = master.address;
        NodeProcess.Node[] nodes = NodeProcess.Node.start(address, 32 << 20, 3);
        closeLater.addAll(List.of(nodes));
        MasterClient admin = new MasterClient(address, Duration.ofSeconds(10));
        closeLater.add(admin);

        int keys = 24;
        long[] crcs = new long[keys];
        for (int i = 0; i < keys; i++) {
            crcs[i] = okLong(nodes[i % 3].call("PUT k/" + i + " " + SIZE + " " + (1000 + i) + " 2"));
        }
        for (int i = 0; i < keys; i++) {
            List<ReplicaLocation> rs = Wire.replicas(admin.getReplicaList("k/" + i).getReplicasList());
            assertEquals(2, rs.stream().map(ReplicaLocation::segmentId).distinct().count(), "k/" + i + " replicas " + rs);
            for (int n = 0; n < 3; n++) {
                assertEquals("OK " + crcs[i] + " " + SIZE, nodes[n].call("GET k/" + i), "k/" + i + " read by node " + n);
            }
        }

        // the victim: a client whose segment holds replicas (each client's single puts go into its reservation, on
        // two segments it was granted, so which segments hold the keys is the reservations' draw)
        int v = -1;
        for (int n : new int[]{1, 0, 2}) {
            String seg = nodes[n].segmentId;
            boolean holds = false;
            for (int i = 0; i < keys && !holds; i++) {
                holds = admin.getReplicaList("k/" + i).getReplicasList().stream().anyMatch(r -> r.getSegmentId().equals(seg));
            }
            if (holds) {
                v = n;
                break;
            }
        }
        assertTrue(v >= 0, "some segment holds the replicas");
        NodeProcess.Node victim = nodes[v];
        NodeProcess.Node first = nodes[v == 0 ? 1 : 0];
        NodeProcess.Node second = nodes[v == 2 ? 1 : 2];
        boolean[] onVictim = new boolean[keys];
        int affected = 0;
        for (int i = 0; i < keys; i++) {
            onVictim[i] = admin.getReplicaList("k/" + i).getReplicasList().stream().anyMatch(r -> r.getSegmentId().equals(victim.segmentId));
            affected += onVictim[i] ? 1 : 0;
        }
        assertTrue(affected > 0, "some replicas sit on the client about to be killed");
        // the victim puts a batch through a reservation: the rest of its reservation is held when it dies
        String[] batchCrcs = okString(victim.call("PUTBATCH v/ 32 4096 7000 1")).split(",");
        // (single puts go through reservations too, so the live clients hold some as well)
        long victimReserved = clientReserved(victim.clientId);
        long reservedBefore = master.metric("store_reserved_bytes");
        long usedBefore = master.metric("store_used_bytes");
        assertTrue(victimReserved > 0, "the victim holds a reservation");
        long killedAt = System.nanoTime();
        victim.kill();
        // before the master notices: reads fail over from the dead client's replicas to the live ones
        for (int i = 0; i < keys; i++) {
            assertEquals("OK " + crcs[i] + " " + SIZE, second.call("GET k/" + i), "k/" + i + " right after the kill");
        }
        // and puts in the TTL window still succeed: a write to the dead client's segment fails, the put is placed again
        long[] during = new long[keys];
        for (int i = 0; i < keys; i++) {
            during[i] = okLong(second.call("PUT w/" + i + " " + SIZE + " " + (3000 + i) + " 2"));
        }
        long failoverNanos = System.nanoTime() - killedAt;
        master.jvm.awaitLine("EXPIRED " + victim.clientId, ChildJvm.DEFAULT_TIMEOUT);
        System.err.printf("reads of %d keys (%d with a replica on the killed client) took %d ms; expiry after %d ms%n",
                keys, affected, failoverNanos / 1_000_000, (System.nanoTime() - killedAt) / 1_000_000);
        // its reservation came back with it; its committed values on live segments stay readable
        assertEquals(-1, clientReserved(victim.clientId), "a dead client's reservations are released at expiry");
        // bytes neither committed nor held by a live client's reservation: at most the window's puts and the dead
        // client's uncommitted rest (parked for the put release timeout: it may only have been stalled)
        long reservedAfter = master.metric("store_reserved_bytes");
        assertTrue(master.metric("store_used_bytes") - reservedAfter <= usedBefore - reservedBefore + (long) keys * 2 * SIZE + victimReserved,
                "used bytes outside live reservations grew only by the puts during the TTL window");
        for (int i = 0; i < batchCrcs.length; i++) {
            String got = first.call("GET v/" + i);
            if (!got.startsWith("ERR OBJECT_NOT_FOUND")) { // its replica was on the victim's own segment
                assertEquals("OK " + batchCrcs[i] + " 4096", got, "v/" + i);
            }
        }
        for (int i = 0; i < keys; i++) {
            List<ReplicaLocation> rs = Wire.replicas(admin.getReplicaList("k/" + i).getReplicasList());
            assertEquals(onVictim[i] ? 1 : 2, rs.size(), "k/" + i + " keeps its surviving replicas only: " + rs);
            assertFalse(rs.stream().anyMatch(r -> r.segmentId().equals(victim.segmentId)));
            assertEquals("OK " + crcs[i] + " " + SIZE, first.call("GET k/" + i));
            assertEquals("OK " + crcs[i] + " " + SIZE, second.call("GET k/" + i));
            assertEquals("OK " + during[i] + " " + SIZE, first.call("GET w/" + i), "w/" + i + " written while the client was dying");
        }

        // free everything (forced: the reads above still hold leases, so the bytes stay reserved until they end)
        // then write new values over the same segments: old keys must never come back with new bytes
        assertTrue(first.call("REMOVE_ALL").startsWith("OK "));
        long[] fresh = new long[keys];
        for (int i = 0; i < keys; i++) {
            fresh[i] = okLong((i % 2 == 0 ? first : second).call("PUT n/" + i + " " + SIZE + " " + (5000 + i) + " 2"));
        }
        for (int i = 0; i < keys; i++) {
            assertTrue(second.call("GET k/" + i).startsWith("ERR OBJECT_NOT_FOUND"), "removed k/" + i);
            assertEquals("OK " + fresh[i] + " " + SIZE, first.call("GET n/" + i));
        }
    }

    @Test
    void aNodeStoppedBySigtermLeavesAtOnceAndIsNeverCountedExpired() throws Exception {
        master = new MasterProcess("--client-ttl", "2s", "--tick", "50ms");
        String address = master.address;
        ChildJvm stopped = ChildJvm.start(Tent4jCommand.class, "store", "node", "--master", address, "--segment-size", "8m");
        closeLater.add(stopped);
        ChildJvm killed = ChildJvm.start(Tent4jCommand.class, "store", "node", "--master", address, "--segment-size", "8m");
        closeLater.add(killed);
        String stoppedId = stopped.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT).split(" ")[1];
        String killedId = killed.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT).split(" ")[1];
        assertEquals(16 << 20, master.metric("store_capacity_bytes"));

        stopped.terminate(); // SIGTERM: the node's shutdown hook closes its client
        assertEquals(143, stopped.process().exitValue(), "the node ends by SIGTERM within 10 s (its shutdown hook ran), not killed");
        assertEquals(-1, clientReserved(stoppedId), "a node that closed has left: the master lists it no more");
        assertEquals(8 << 20, master.metric("store_capacity_bytes"), "its segment was unmounted at once, not at its TTL");

        // the killed node expires one TTL after its last ping; had the stopped one not left, it would have expired first
        killed.kill();
        assertEquals("EXPIRED " + killedId, master.jvm.awaitLine("EXPIRED ", ChildJvm.DEFAULT_TIMEOUT));
        assertEquals(1, master.metric("store_clients_expired_total"), "only the killed node counts as expired");
        assertEquals(0, master.metric("store_capacity_bytes"));
    }

    /** Bytes the master says the client holds in reservations; -1 if it does not list the client. */
    private long clientReserved(String clientId) throws Exception {
        var m = java.util.regex.Pattern.compile("\\{\"id\":\"" + java.util.regex.Pattern.quote(clientId)
                + "\"[^}]*\"reservedBytes\":(\\d+)").matcher(master.get("/clients"));
        return m.find() ? Long.parseLong(m.group(1)) : -1;
    }
}
