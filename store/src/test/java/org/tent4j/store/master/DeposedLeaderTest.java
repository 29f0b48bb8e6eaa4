package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.RegisterResponse;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.testkit.ChildJvm;

/**
 * Fencing with real processes: three masters in child JVMs, the leader SIGSTOPped until another is elected and puts
 * land there, then SIGCONTed. Every call the deposed leader gets from then on (a removal of every object, sent by a
 * client pinned to it) is refused {@code NOT_LEADER}, never acknowledged; its state catches up with the new leader's,
 * and every acknowledged object reads back CRC-equal.
 */
class DeposedLeaderTest {
    private static final Pattern TERM = Pattern.compile("\"term\":(\\d+)");
    private static final Pattern OBJECTS = Pattern.compile("\"objects\":(\\d+)");
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();

    @TempDir
    Path dir;

    @Test
    void aDeposedLeaderAcknowledgesNothingAfterItWakes() throws Exception {
        int[] rpcPorts = new int[3];
        StringBuilder peers = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            rpcPorts[i] = freePort();
            peers.append(i == 0 ? "" : ",").append("m").append(i).append("=127.0.0.1:").append(freePort())
                    .append('/').append(rpcPorts[i]);
        }
        List<String> rpc = new ArrayList<>();
        ChildJvm[] masters = new ChildJvm[3];
        int[] admin = new int[3];
        List<TransferEngine> engines = new ArrayList<>();
        StoreClient node = null;
        StoreClient user = null;
        ManagedChannel pinned = null;
        try {
            for (int i = 0; i < 3; i++) {
                // C1 only and the serial collector: three JVMs start at once on a small box
                masters[i] = ChildJvm.builder(DurableMasterProcess.class)
                        .jvmOptions(List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"))
                        .args(dir.resolve("m" + i).toString(), Integer.toString(rpcPorts[i]), "m" + i, peers.toString())
                        .start();
                rpc.add("127.0.0.1:" + rpcPorts[i]);
            }
            for (int i = 0; i < 3; i++) {
                admin[i] = Integer.parseInt(masters[i].awaitLine("LISTENING ", Duration.ofSeconds(60)).split(" ")[2]);
            }
            int leader = awaitLeader(admin, -1, 0);
            long term = number(TERM, health(admin[leader]));

            node = StoreClient.builder(DurableValues.engine(engines), rpc).heartbeatInterval(Duration.ofMillis(200)).connect();
            node.contribute(4 << 20);
            user = StoreClient.builder(DurableValues.engine(engines), rpc).stagingBytes(1 << 20)
                    .rpcTimeout(Duration.ofSeconds(2)).connect();
            List<byte[]> before = DurableValues.put(user, "before/", 20, 3333);
            // a client that talks to this master alone, registered while it led (the group's key makes its
            // credential good on every master)
            pinned = NettyChannelBuilder.forTarget(rpc.get(leader)).usePlaintext().build();
            RegisterResponse reg = MasterGrpc.newBlockingStub(pinned).withDeadlineAfter(5, TimeUnit.SECONDS)
                    .register(Empty.getDefaultInstance());
            Metadata credential = new Metadata();
            credential.put(Metadata.Key.of("tent4j-store-client", Metadata.ASCII_STRING_MARSHALLER),
                    reg.getClientId() + ":" + HexFormat.of().formatHex(reg.getCredential().toByteArray()));
            MasterGrpc.MasterBlockingStub stale = MasterGrpc.newBlockingStub(pinned)
                    .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(credential));

            signal("STOP", masters[leader]);
            int newLeader = awaitLeader(admin, leader, term);
            long newTerm = number(TERM, health(admin[newLeader]));
            // the user's client was on the stopped leader: its puts move to the new one (a put whose call timed out
            // there may fail; it is not counted)
            List<byte[]> after = new ArrayList<>();
            java.util.Random rnd = new java.util.Random(4444);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (after.size() < 10) {
                byte[] v = new byte[1 + rnd.nextInt(32 << 10)];
                rnd.nextBytes(v);
                try {
                    assertEquals(PutResult.Status.STORED, user.put("after/" + after.size(), v, ReplicateConfig.replicas(1)).status());
                    after.add(v);
                } catch (StoreException notYet) {
                    assertTrue(System.nanoTime() < deadline, "no put landed on the new leader within 15 s: " + notYet);
                }
            }

            signal("CONT", masters[leader]);
            // from the moment it wakes (still believing it leads, or already told otherwise) the deposed leader is
            // asked to remove every object, until it says it follows: each call is refused NOT_LEADER
            int refusals = 0;
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                try {
                    CountResponse r = stale.withDeadlineAfter(5, TimeUnit.SECONDS).removeByRegex(
                            RemoveByRegexRequest.newBuilder().setRegex("(before|after)/.*").setRequestSeq(refusals + 1).build());
                    assertEquals(StoreError.NOT_LEADER.code(), r.getStatus().getCode(),
                            "the deposed leader answered a removal other than NOT_LEADER: " + r);
                } catch (StatusRuntimeException e) {
                    assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION, e.getStatus().getCode(), e.toString());
                    assertTrue(e.getStatus().getDescription().startsWith("NOT_LEADER"), e.toString());
                }
                refusals++;
                String h = health(admin[leader]);
                if (h != null && h.contains("\"role\":\"follower\"") && number(TERM, h) >= newTerm) {
                    break;
                }
                assertTrue(System.nanoTime() < deadline, "the deposed leader did not say it follows within 10 s: " + h);
            }
            assertTrue(refusals > 0);

            // nothing it was asked took effect: its state catches up with the new leader's, every object in it
            long objects = before.size() + after.size();
            assertEquals(objects, number(OBJECTS, health(admin[newLeader])));
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (number(OBJECTS, health(admin[leader])) != objects) {
                assertTrue(System.nanoTime() < deadline, "the deposed leader's state did not catch up: " + health(admin[leader]));
                LockSupport.parkNanos(20_000_000L);
            }
            DurableValues.assertReadBack(user, "before/", before);
            DurableValues.assertReadBack(user, "after/", after);
        } finally {
            if (pinned != null) {
                pinned.shutdownNow();
            }
            if (user != null) {
                user.close();
            }
            if (node != null) {
                node.close();
            }
            for (ChildJvm m : masters) {
                if (m != null) {
                    // SIGKILL reaches a stopped process too
                    m.kill();
                }
            }
            engines.forEach(TransferEngine::close);
        }
    }

    /** The index of a master that says it leads in a term after {@code afterTerm}, never {@code skip}'s (stopped). */
    private int awaitLeader(int[] admin, int skip, long afterTerm) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            for (int i = 0; i < admin.length; i++) {
                String h = i == skip ? null : health(admin[i]);
                if (h != null && h.contains("\"role\":\"leader\"") && number(TERM, h) > afterTerm) {
                    return i;
                }
            }
            assertTrue(System.nanoTime() < deadline, "no leader after term " + afterTerm + " within 20 s");
            LockSupport.parkNanos(50_000_000L);
        }
    }

    /** {@code /health} of the master whose admin port this is; null when it does not answer within a second. */
    private String health(int adminPort) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + "/health"))
                    .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.ofString());
            return r.statusCode() == 200 ? r.body() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    private static long number(Pattern p, String json) {
        Matcher m = p.matcher(String.valueOf(json));
        assertTrue(m.find(), "no " + p + " in " + json);
        return Long.parseLong(m.group(1));
    }

    private static void signal(String signal, ChildJvm jvm) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(jvm.process().pid())).inheritIO().start();
        assertEquals(0, kill.waitFor(), "kill -" + signal + " " + jvm.process().pid());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
