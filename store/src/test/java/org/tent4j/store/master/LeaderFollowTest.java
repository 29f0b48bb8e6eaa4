package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.NotLeaderException;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.admin.AdminServer;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.proto.KeyRequest;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.rpc.MasterServer;
import org.tent4j.testkit.net.FreePorts;

/**
 * Three masters (a Ratis group in this JVM, each with its store RPC and admin HTTP on real ports), one node, one
 * client: followers refuse with {@code NOT_LEADER} naming the leader and say {@code follower} on {@code /health}; the
 * client, given every master, finds the leader; the leader is stopped, the client and the node follow the new one
 * within 5 s, and every object acknowledged before or after reads back CRC-equal.
 */
class LeaderFollowTest {
    private static final DurableLog.Settings SETTINGS = new DurableLog.Settings(1_000_000, false, 60_000);
    private static final Metadata.Key<String> LEADER = Metadata.Key.of("tent4j-store-leader", Metadata.ASCII_STRING_MARSHALLER);

    @TempDir
    Path dir;

    @Test
    void clientsAndNodesFollowTheLeaderAcrossAFailover() throws Exception {
        List<MasterPeer> peers = new ArrayList<>();
        List<MasterServer> servers = startMasters(peers);
        List<AdminServer> admins = new ArrayList<>();
        List<TransferEngine> engines = new ArrayList<>();
        try {
            for (MasterServer s : servers) {
                admins.add(AdminServer.start(s, "127.0.0.1", 0));
            }
            int leader = awaitLeader(servers, -1);
            String leaderRpc = peers.get(leader).rpc();
            int follower = (leader + 1) % 3;

            // a follower refuses a read and a write before touching anything, naming the leader's store address
            long objectsBefore = servers.get(follower).master().state().objectCount();
            ManagedChannel raw = NettyChannelBuilder.forTarget(peers.get(follower).rpc()).usePlaintext().build();
            try {
                StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () ->
                        MasterGrpc.newBlockingStub(raw).size(KeyRequest.newBuilder().setKey("k").build()));
                assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION, refused.getStatus().getCode());
                assertTrue(refused.getStatus().getDescription().startsWith("NOT_LEADER"), refused.getStatus().getDescription());
                assertEquals(leaderRpc, refused.getTrailers().get(LEADER));
            } finally {
                raw.shutdownNow();
            }
            assertEquals(objectsBefore, servers.get(follower).master().state().objectCount());
            // the log refuses a follower's write too, naming the leader
            NotLeaderException logRefused = assertThrows(NotLeaderException.class,
                    () -> servers.get(follower).master().heartbeat("nobody"));
            assertEquals(leaderRpc, logRefused.leader());

            assertTrue(health(admins.get(leader)).contains("\"role\":\"leader\""), health(admins.get(leader)));
            String fh = health(admins.get(follower));
            assertTrue(fh.contains("\"role\":\"follower\"") && fh.contains("\"leader_address\":\"" + leaderRpc + "\""), fh);
            // the term and role on /metrics and the status page, as /health says them
            long term = term(health(admins.get(leader)));
            assertTrue(term > 0, health(admins.get(leader)));
            assertTermAndRole(admins.get(leader), term, true);
            assertTermAndRole(admins.get(follower), term, false);

            // followers first in the list: the client and the node find the leader themselves
            List<String> masters = new ArrayList<>();
            for (int i = 1; i <= 3; i++) {
                masters.add(peers.get((leader + i) % 3).rpc());
            }
            StoreClient node = StoreClient.builder(DurableValues.engine(engines), masters)
                    .heartbeatInterval(java.time.Duration.ofMillis(200)).connect();
            node.contribute(8 << 20);
            StoreClient user = StoreClient.builder(DurableValues.engine(engines), masters).stagingBytes(1 << 20)
                    .rpcTimeout(java.time.Duration.ofSeconds(2)).connect();
            Random rnd = new Random(22);
            List<String> keys = new ArrayList<>();
            List<byte[]> values = new ArrayList<>();
            long commitsBefore = metric(admins.get(leader), "store_raft_commit_latency_seconds_count");
            for (int i = 0; i < 20; i++) {
                byte[] v = value(rnd);
                assertEquals(PutResult.Status.STORED, user.put("before/" + i, v, ReplicateConfig.replicas(1)).status());
                keys.add("before/" + i);
                values.add(v);
            }

            assertEquals(term, user.masterTerm(), "the answers carry the leader's term");
            // each put is at least one entry the leader proposed (the node's heartbeats add more)
            long commits = metric(admins.get(leader), "store_raft_commit_latency_seconds_count") - commitsBefore;
            assertTrue(commits >= 20, commits + " commit-latency samples for 20 puts");
            long[] changesBefore = new long[3];
            for (int i = 0; i < 3; i++) {
                changesBefore[i] = metric(admins.get(i), "store_raft_leader_changes_total");
            }
            String nodeId = node.clientId();
            String userId = user.clientId();
            servers.get(leader).close();
            admins.get(leader).close();
            long stopped = System.nanoTime();
            // the first puts may fail (their stream broke with the leader); one must land within 5 s
            int attempt = 0;
            byte[] first = value(rnd);
            while (true) {
                String key = "after/try" + attempt++;
                try {
                    if (user.put(key, first, ReplicateConfig.replicas(1)).status() == PutResult.Status.STORED) {
                        keys.add(key);
                        values.add(first);
                        break;
                    }
                } catch (StoreException notYet) {
                    assertTrue(System.nanoTime() - stopped < TimeUnit.SECONDS.toNanos(5),
                            "no put landed within 5 s of the leader stopping: " + notYet);
                }
            }
            long failoverMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stopped);
            assertTrue(failoverMillis < 5_000, failoverMillis + " ms to the first put on the new leader");
            int newLeader = awaitLeader(servers, leader);
            assertTrue(newLeader != leader);
            long newTerm = term(health(admins.get(newLeader)));
            assertTrue(newTerm > term, "the new leader's term " + newTerm + " is after " + term);
            assertTermAndRole(admins.get(newLeader), newTerm, true);
            // a put landed on it, so it had seen itself elected before: one change (or more, had the vote gone back and forth)
            assertTrue(metric(admins.get(newLeader), "store_raft_leader_changes_total") > changesBefore[newLeader],
                    get(admins.get(newLeader), "/metrics"));
            for (int i = 0; i < 10; i++) {
                byte[] v = value(rnd);
                assertEquals(PutResult.Status.STORED, user.put("after/" + i, v, ReplicateConfig.replicas(1)).status());
                keys.add("after/" + i);
                values.add(v);
            }
            assertEquals(newTerm, user.masterTerm(), "the new leader's answers carry its term");
            for (int i = 0; i < keys.size(); i++) {
                byte[] got = user.get(keys.get(i));
                assertNotNull(got, keys.get(i));
                assertEquals(crc(values.get(i)), crc(got), keys.get(i));
            }
            // the group shares its credential key: both keep their ids on the new leader (no re-registration, the
            // node's segment still its own), and the node's heartbeats reach it
            assertEquals(nodeId, node.clientId());
            assertEquals(userId, user.clientId());
            MasterState s = servers.get(newLeader).master().state();
            assertTrue(!s.segments().isEmpty() && s.segments().stream().allMatch(seg -> seg.owner().equals(nodeId)),
                    s.segments().toString());
            user.close();
            node.close();
        } finally {
            for (AdminServer a : admins) {
                a.close();
            }
            for (MasterServer s : servers) {
                s.close();
            }
            engines.forEach(TransferEngine::close);
        }
    }

    /**
     * The three masters, each on its log and serving its store RPC, on fresh ports ({@link FreePorts#startOn}: started
     * again on other ones, in emptied dirs, when one was taken); {@code peers} is set to the group's.
     */
    private List<MasterServer> startMasters(List<MasterPeer> peers) throws IOException {
        GroupPorts.keepJvmOnRatisBindFailure();
        return FreePorts.startOn(6, ports -> {
            peers.clear();
            for (int i = 1; i <= 3; i++) {
                peers.add(new MasterPeer("m" + i, "127.0.0.1:" + ports[2 * i - 2], "127.0.0.1:" + ports[2 * i - 1]));
            }
            GroupPorts.wipe(peers.stream().map(p -> dir.resolve(p.id())).toArray(Path[]::new));
            List<CompletableFuture<DurableLog>> opening = new ArrayList<>();
            for (MasterPeer p : peers) {
                opening.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return DurableLog.open(MasterConfig.defaults(), dir.resolve(p.id()), p.id(), peers, SETTINGS);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }));
            }
            List<MasterServer> servers = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    DurableLog log = opening.get(i).join();
                    servers.add(MasterServer.start(new StoreMaster(log, StoreClock.system()), "127.0.0.1",
                            port(peers.get(i).rpc()), 100, r -> { }));
                }
                return servers;
            } catch (IOException | RuntimeException e) {
                // a server closes its log; one that failed to start closed it too
                for (MasterServer s : servers) {
                    s.close();
                }
                GroupPorts.closeOpened(opening.subList(servers.size() + 1, opening.size()));
                throw e;
            }
        });
    }

    /**
     * With no master of the list reachable a call fails within its timeout as {@code NOT_LEADER}, naming every master
     * and what each answered; a malformed list and a peer's store port are refused or parsed naming the item.
     */
    @Test
    void noLeaderAmongTheMastersIsAnErrorNamingEachOne() throws Exception {
        // two ports nobody listens on, never the same one twice (the list would be refused as naming a master twice)
        int[] dead = FreePorts.pick(2);
        String a = "127.0.0.1:" + dead[0];
        String b = "127.0.0.1:" + dead[1];
        // the call keeps trying both until its timeout: long enough for a first connect on a loaded box (800 ms was
        // not, at load 9: the first master "no answer in time", the second never tried)
        try (org.tent4j.store.rpc.MasterClient client = new org.tent4j.store.rpc.MasterClient(a + "," + b,
                java.time.Duration.ofSeconds(2), org.tent4j.store.StoreSecurity.NONE)) {
            StoreException e = assertThrows(StoreException.class, client::register);
            assertEquals(StoreError.NOT_LEADER, e.error());
            assertTrue(e.getMessage().contains(a + "=unreachable") && e.getMessage().contains(b + "=unreachable"),
                    e.getMessage());
        }
        IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
                () -> new org.tent4j.store.rpc.MasterClient(a + "," + a, java.time.Duration.ofSeconds(1),
                        org.tent4j.store.StoreSecurity.NONE));
        assertTrue(twice.getMessage().contains(a + " is named twice"), twice.getMessage());
        IllegalArgumentException noPort = assertThrows(IllegalArgumentException.class,
                () -> new org.tent4j.store.rpc.MasterClient(a + ",host", java.time.Duration.ofSeconds(1),
                        org.tent4j.store.StoreSecurity.NONE));
        assertTrue(noPort.getMessage().contains("'host'"), noPort.getMessage());
        assertEquals(List.of(new MasterPeer("m1", "10.0.0.1:9871", "10.0.0.1:50051"),
                        new MasterPeer("m2", "10.0.0.2:9871", null)),
                MasterPeer.parse("m1=10.0.0.1:9871/50051,m2=10.0.0.2:9871"));
        assertThrows(IllegalArgumentException.class, () -> MasterPeer.parse("m1=10.0.0.1:9871/x"));
    }

    /** The index of a server whose master leads, other than {@code not}; waits (bounded) for an election. */
    private static int awaitLeader(List<MasterServer> servers, int not) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < servers.size(); i++) {
                if (i != not && servers.get(i).master().log().role().leader()
                        && servers.get(i).master().log().credentialKey().isDone()) {
                    return i;
                }
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no leader elected within 20 s");
    }

    private static String health(AdminServer admin) throws Exception {
        return get(admin, "/health");
    }

    private static String get(AdminServer admin, String path) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + admin.port() + path)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        return r.body();
    }

    private static long term(String health) {
        var m = java.util.regex.Pattern.compile("\"term\":(\\d+)").matcher(health);
        assertTrue(m.find(), health);
        return Long.parseLong(m.group(1));
    }

    /**
     * {@code /metrics} says this master's role and term (and Ratis's commit and applied indexes), and the status page
     * says them to a person.
     */
    private static void assertTermAndRole(AdminServer admin, long term, boolean leads) throws Exception {
        String metrics = get(admin, "/metrics");
        assertTrue(metrics.contains("\nstore_master_is_leader " + (leads ? 1 : 0) + "\n"), metrics);
        assertTrue(metrics.contains("\nstore_master_term " + term + "\n"), metrics);
        var commit = java.util.regex.Pattern.compile("\nstore_raft_commit_index (\\d+)\n").matcher(metrics);
        var applied = java.util.regex.Pattern.compile("\nstore_raft_applied_index (\\d+)\n").matcher(metrics);
        assertTrue(commit.find() && applied.find(), metrics);
        assertTrue(Long.parseLong(commit.group(1)) > 0, metrics);
        // the log's own series: no snapshot here (one every 1,000,000 entries), so an index of -1 and no age
        assertTrue(metric(admin, "store_raft_leader_changes_total") >= 1, metrics);
        assertTrue(metrics.contains("\nstore_raft_snapshot_index -1\n") && !metrics.contains("store_raft_snapshot_age_seconds"),
                metrics);
        String page = get(admin, "/");
        assertTrue(page.contains("<b id=\"term\">" + term + "</b>"), page);
        assertTrue(page.contains("<b id=\"leader-changes\">" + metric(admin, "store_raft_leader_changes_total") + "</b>")
                && page.contains("<span id=\"snapshot\">none yet</span>"), page);
        assertTrue(page.contains(leads ? "<span class=\"ok\">leader</span>" : "<span class=\"warn\">follower</span>"), page);
    }

    /** A sample without labels from {@code /metrics}. */
    private static long metric(AdminServer admin, String name) throws Exception {
        String metrics = get(admin, "/metrics");
        var m = java.util.regex.Pattern.compile("\n" + name + " (\\d+)\n").matcher(metrics);
        assertTrue(m.find(), name + " in " + metrics);
        return Long.parseLong(m.group(1));
    }

    private static byte[] value(Random rnd) {
        byte[] v = new byte[1 + rnd.nextInt(64 << 10)];
        rnd.nextBytes(v);
        return v;
    }

    private static long crc(byte[] b) {
        java.util.zip.CRC32 c = new java.util.zip.CRC32();
        c.update(b);
        return c.getValue();
    }

    private static int port(String address) {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }
}
