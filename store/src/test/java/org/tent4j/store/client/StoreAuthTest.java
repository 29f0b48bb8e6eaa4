package org.tent4j.store.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterState;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.proto.CommitItem;
import org.tent4j.store.proto.CommitRequest;
import org.tent4j.store.proto.CommitResponse;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.PingRequest;
import org.tent4j.store.proto.PutStartResponse;
import org.tent4j.store.proto.ReserveRequest;
import org.tent4j.store.rpc.ClientCredentials;
import org.tent4j.store.rpc.MasterClient;
import org.tent4j.store.rpc.MasterServer;
import org.tent4j.testkit.tls.TestKeys;

/**
 * The store's RPC under a token (issue 29): strangers are refused before anything changes, a client acts only for
 * itself, forced bulk removal needs the admin token, and TLS. Real master server, real clients and engines.
 */
class StoreAuthTest {
    private static final byte[] TOKEN = "cluster-secret-1".getBytes(StandardCharsets.UTF_8);
    private static final byte[] ADMIN = "admin-secret-2".getBytes(StandardCharsets.UTF_8);
    private static final StoreSecurity MEMBER = StoreSecurity.NONE.withToken(TOKEN);

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    private MasterServer master(StoreSecurity security) throws Exception {
        MasterServer s = MasterServer.start(new StoreMaster(MasterConfig.defaults(), StoreClock.system()), "127.0.0.1", 0,
                0, r -> { }, security, ClientCredentials.random());
        open.add(s);
        return s;
    }

    private TransferEngine engine() {
        TransferEngine e = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
        open.add(e);
        return e;
    }

    private StoreClient client(MasterServer m, StoreSecurity security) {
        StoreClient c = StoreClient.builder(engine(), "127.0.0.1:" + m.port()).security(security)
                .heartbeatInterval(Duration.ZERO).stagingBytes(4 << 20).connect();
        open.add(c);
        return c;
    }

    private MasterClient raw(MasterServer m, StoreSecurity security) {
        MasterClient c = new MasterClient("127.0.0.1:" + m.port(), Duration.ofSeconds(10), security);
        open.add(c);
        return c;
    }

    /** What a refused call must not have changed. */
    private record Counts(long objects, int segments, int clients, long reservedBytes) {
        static Counts of(MasterServer m) {
            MasterState s = m.master().state();
            return new Counts(s.objectCount(), s.segments().size(), s.stats().clients(), s.reservedBytes());
        }
    }

    private static List<byte[]> putValues(StoreClient c, String prefix, int n) {
        Random rnd = new Random(29);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            byte[] v = new byte[4096 + i];
            rnd.nextBytes(v);
            values.add(v);
            assertEquals(PutResult.Status.STORED, c.put(prefix + i, v, ReplicateConfig.replicas(1)).status());
        }
        return values;
    }

    private static void readBack(StoreClient c, String prefix, List<byte[]> values) {
        for (int i = 0; i < values.size(); i++) {
            assertArrayEquals(values.get(i), c.get(prefix + i), prefix + i);
        }
    }

    private static StoreException refused(StoreError error, String says, Executable call) {
        StoreException e = assertThrows(StoreException.class, call);
        assertEquals(error, e.error(), e.getMessage());
        assertTrue(e.getMessage().contains(says), e.getMessage());
        return e;
    }

    @Test
    void callsWithoutTheTokenOrWithAWrongOneAreRefusedBeforeAnyStateChanges() throws Exception {
        MasterServer m = master(MEMBER);
        StoreClient node = client(m, MEMBER);
        node.contribute(8 << 20);
        List<byte[]> values = putValues(node, "auth/", 4);
        Counts before = Counts.of(m);
        assertEquals(4, before.objects());

        byte[] wrongToken = "not-the-secret".getBytes(StandardCharsets.UTF_8);
        for (MasterClient stranger : List.of(raw(m, StoreSecurity.NONE), raw(m, StoreSecurity.NONE.withToken(wrongToken)))) {
            List<Executable> calls = List.of(stranger::serviceReady, stranger::register,
                    () -> stranger.exists("auth/0"), () -> stranger.getReplicaList("auth/0"), () -> stranger.size("auth/0"),
                    () -> stranger.remove("auth/0", true), () -> stranger.removeAll(true),
                    () -> stranger.removeByRegex(".*", true), () -> stranger.batchRemove(List.of("auth/1"), true),
                    () -> stranger.ping(node.clientId(), 0, 0), () -> stranger.leave(node.clientId()),
                    () -> stranger.unmount(node.clientId(), node.contributions().getFirst().id()),
                    () -> stranger.mount("x", new SegmentSpec("evil", "127.0.0.1:1", "127.0.0.1", 4096, 1 << 20), 1L));
            for (Executable call : calls) {
                StoreException e = refused(StoreError.UNAUTHENTICATED, "127.0.0.1:" + m.port(), call);
                assertTrue(e.getMessage().contains("requires a token") || e.getMessage().contains("not this store master's"),
                        e.getMessage());
                // the message never shows a token, right or wrong, nor the proof of one
                for (String secret : List.of(new String(TOKEN, StandardCharsets.UTF_8), new String(wrongToken, StandardCharsets.UTF_8))) {
                    assertFalse(e.getMessage().contains(secret), e.getMessage());
                }
            }
        }
        assertThrows(StoreException.class, () -> client(m, StoreSecurity.NONE), "a client without the token cannot connect");
        // 13 calls from each stranger and the tokenless client's first call, each refused once and counted
        assertEquals(27, m.refusedUnauthenticated());
        StringBuilder metrics = new StringBuilder();
        m.stats().appendPrometheus(metrics);
        assertTrue(metrics.toString().contains("\nstore_rpc_unauthenticated_total 27\n"), metrics.toString());

        assertEquals(before, Counts.of(m));
        readBack(node, "auth/", values);
    }

    @Test
    void aClientNamingAnotherClientsIdSegmentPutOrReservationIsRefusedAndTheOtherKeepsEverything() throws Exception {
        MasterServer m = master(MEMBER);
        StoreClient victim = client(m, MEMBER);
        SegmentSpec victimSeg = victim.contribute(8 << 20);
        List<byte[]> values = putValues(victim, "victim/", 6);
        String b = victim.clientId();
        // a put of the victim's in flight, and a reservation it holds, for the attacker to name
        PutStartResponse inFlight = victim.master().putStart(MasterClient.putStartRequest(b, "victim/open", 4096,
                ReplicateConfig.replicas(1), victim.host(), false));
        CommitResponse granted = victim.master().commit(CommitRequest.newBuilder().setClientId(b)
                .setRefill(ReserveRequest.newBuilder().setBytes(64 << 10).setReplicas(1).setWriterHost(victim.host())).build());
        assertEquals(1, granted.getGrantedCount(), granted.toString());
        long reservation = granted.getGranted(0).getId();
        long reservedAt = granted.getGranted(0).getRange().getAddress();

        StoreClient attacker = client(m, MEMBER);
        attacker.contribute(4 << 20);
        String a = attacker.clientId();
        assertFalse(a.equals(b));
        MasterClient as = attacker.master();
        Counts before = Counts.of(m);

        String other = "a client acts only for itself";
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.ping(b, 1_000, 0));
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.mount(b, new SegmentSpec("evil", "127.0.0.1:1", "127.0.0.1", 4096, 1 << 20), 1L));
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.unmount(b, victimSeg.id()));
        refused(StoreError.ILLEGAL_CLIENT, "belongs to " + b, () -> as.unmount(a, victimSeg.id()));
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.leave(b));
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.putStart(MasterClient.putStartRequest(b, "evil/k", 64,
                ReplicateConfig.replicas(1), "h", false)));
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.putEnd(b, "victim/open", inFlight.getPutId()));
        refused(StoreError.ILLEGAL_CLIENT, "did not start put", () -> as.putEnd(a, "victim/open", inFlight.getPutId()));
        refused(StoreError.ILLEGAL_CLIENT, other, () -> as.putRevoke(b, "victim/open", inFlight.getPutId()));
        refused(StoreError.ILLEGAL_CLIENT, "did not start put", () -> as.putRevoke(a, "victim/open", inFlight.getPutId()));
        assertEquals(StoreError.ILLEGAL_CLIENT.code(), as.batchPutEnd(List.of(MasterClient.endRequest(b, "victim/open",
                inFlight.getPutId()))).getFirst().getCode());
        assertEquals(StoreError.ILLEGAL_CLIENT.code(), as.batchPutRevoke(List.of(MasterClient.endRequest(b, "victim/open",
                inFlight.getPutId()))).getFirst().getCode());
        CommitResponse asVictim = as.commit(CommitRequest.newBuilder().setClientId(b).addRetire(reservation).build());
        assertEquals(StoreError.ILLEGAL_CLIENT.code(), asVictim.getRefillStatus().getCode(), asVictim.toString());
        CommitResponse intoVictims = as.commit(CommitRequest.newBuilder().setClientId(a).addItems(CommitItem.newBuilder()
                .setKey("evil/in-victims-reservation").setSize(64).addReservation(reservation).addAddress(reservedAt)).build());
        assertEquals(StoreError.ILLEGAL_CLIENT.code(), intoVictims.getItems(0).getCode(), intoVictims.toString());
        // with the token but no credential, or a forged one, no call may name a client
        MasterClient unregistered = raw(m, MEMBER);
        refused(StoreError.ILLEGAL_CLIENT, "carries no valid client credential", () -> unregistered.ping(b, 0, 0));
        refused(StoreError.ILLEGAL_CLIENT, "carries no valid client credential", () -> unregistered.leave(b));
        ManagedChannel forged = NettyChannelBuilder.forTarget("127.0.0.1:" + m.port()).usePlaintext().build();
        open.add(() -> {
            forged.shutdownNow();
            forged.awaitTermination(5, TimeUnit.SECONDS);
        });
        Metadata h = new Metadata();
        // the wire's token proof (HMAC-SHA256 of a fixed purpose under the token), with a made-up credential for b
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(TOKEN, "HmacSHA256"));
        h.put(Metadata.Key.of("tent4j-store-token", Metadata.ASCII_STRING_MARSHALLER),
                java.util.HexFormat.of().formatHex(mac.doFinal("tent4j-store/1 token".getBytes(StandardCharsets.UTF_8))));
        h.put(Metadata.Key.of("tent4j-store-client", Metadata.ASCII_STRING_MARSHALLER), b + ":" + "00".repeat(32));
        var stub = MasterGrpc.newBlockingStub(forged).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h));
        var forgedPing = stub.ping(PingRequest.newBuilder().setClientId(b).build());
        assertEquals(StoreError.ILLEGAL_CLIENT.code(), forgedPing.getStatus().getCode(), forgedPing.toString());

        assertEquals(before, Counts.of(m), "nothing the attacker named changed");
        assertEquals(1, m.master().segments().stream().filter(s -> s.id().equals(victimSeg.id()) && s.owner().equals(b)).count());
        readBack(attacker, "victim/", values);
        // the victim carries on: its ping is its own, its in-flight put ends, its reservation is still its own
        assertFalse(victim.master().ping(b, 0, 0), "the victim was not made to remount");
        victim.master().putEnd(b, "victim/open", inFlight.getPutId());
        CommitResponse retired = victim.master().commit(CommitRequest.newBuilder().setClientId(b).addRetire(reservation).build());
        assertEquals(0, retired.getRefillStatus().getCode(), retired.toString());
        assertTrue(victim.exists("victim/open"), "the victim's put ended: readable");
        assertEquals(before.objects(), m.master().state().objectCount());
    }

    @Test
    void aClientWhoseMasterRestartedInMemoryRegistersAgainAndRemounts() throws Exception {
        MasterServer first = master(MEMBER);
        int port = first.port();
        StoreClient node = client(first, MEMBER);
        SegmentSpec seg = node.contribute(4 << 20);
        String before = node.clientId();
        first.close();
        // a new master on the same port: a new key, so the node's credential names nobody there
        MasterServer second = MasterServer.start(new StoreMaster(MasterConfig.defaults(), StoreClock.system()), "127.0.0.1",
                port, 0, r -> { }, MEMBER, ClientCredentials.random());
        open.add(second);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (second.master().segments().isEmpty() && System.nanoTime() < deadline) {
            node.heartbeat(); // the first may find the channel still backing off from the restart
        }
        List<MasterState.SegmentView> mounted = second.master().segments();
        assertEquals(List.of(seg.id()), mounted.stream().map(MasterState.SegmentView::id).toList());
        assertFalse(node.clientId().equals(before), "a new id, issued by the new master");
        assertEquals(node.clientId(), mounted.getFirst().owner());
        readBack(node, "again/", putValues(node, "again/", 2));
    }

    @Test
    void forcedBulkRemovalNeedsTheAdminToken() throws Exception {
        MasterServer m = master(MEMBER.withAdminToken(ADMIN));
        StoreClient node = client(m, MEMBER);
        node.contribute(8 << 20);
        List<byte[]> values = putValues(node, "bulk/", 4);
        StoreClient wrongAdmin = client(m, MEMBER.withAdminToken("guess".getBytes(StandardCharsets.UTF_8)));
        Counts before = Counts.of(m);
        for (StoreClient c : List.of(node, wrongAdmin)) {
            refused(StoreError.PERMISSION_DENIED, "RemoveAll is an admin operation", () -> c.removeAll(false));
            refused(StoreError.PERMISSION_DENIED, "RemoveAll is an admin operation", () -> c.removeAll(true));
            refused(StoreError.PERMISSION_DENIED, "RemoveByRegex with force is an admin operation", () -> c.removeByRegex(".*", true));
            refused(StoreError.PERMISSION_DENIED, "BatchRemove with force is an admin operation",
                    () -> c.removeBatch(List.of("bulk/0", "bulk/1"), true));
        }
        assertEquals(before, Counts.of(m));
        readBack(node, "bulk/", values);
        // what is not bulk or not forced stays every member's: every value was just read, so leased and kept
        assertEquals(0, node.removeByRegex("bulk/.*"));
        assertEquals(4, m.master().state().objectCount());

        StoreClient admin = client(m, MEMBER.withAdminToken(ADMIN));
        assertEquals(2, admin.removeByRegex("bulk/[01]", true));
        assertEquals(2, admin.removeAll(true));
        assertEquals(0, m.master().state().objectCount());
    }

    @Test
    void aMasterWithATokenAndNoAdminTokenRefusesForcedBulkRemovalToEveryone() throws Exception {
        MasterServer m = master(MEMBER);
        StoreClient node = client(m, MEMBER.withAdminToken(ADMIN));
        node.contribute(8 << 20);
        putValues(node, "closed/", 2);
        refused(StoreError.PERMISSION_DENIED, "admin operation", () -> node.removeAll(true));
        assertEquals(2, m.master().state().objectCount());
    }

    @Test
    void overMutualTlsOnlyTrustedClientsAreServed(@TempDir Path dir) throws Exception {
        List<TestKeys> keys = TestKeys.generate(dir, "cluster", "stranger");
        StoreSecurity tls = MEMBER.withTls(keys.get(0).certificate(), keys.get(0).privateKey(), null);
        MasterServer m = master(tls);
        StoreClient node = client(m, tls);
        node.contribute(8 << 20);
        readBack(node, "tls/", putValues(node, "tls/", 3));

        refused(StoreError.RPC_FAIL, "127.0.0.1:" + m.port(), raw(m, MEMBER)::serviceReady);
        StoreSecurity untrusted = MEMBER.withTls(keys.get(1).certificate(), keys.get(1).privateKey(), keys.get(0).certificate());
        refused(StoreError.RPC_FAIL, "127.0.0.1:" + m.port(), raw(m, untrusted)::serviceReady);
        assertEquals(3, m.master().state().objectCount());
    }
}
