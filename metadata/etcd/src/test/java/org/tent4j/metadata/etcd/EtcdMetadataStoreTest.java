package org.tent4j.metadata.etcd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.LeaseOption;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.testkit.metadata.WatchRecorder;
import org.tent4j.testkit.servers.EtcdServer;
import org.tent4j.testkit.servers.LoopbackPorts;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EtcdMetadataStoreTest {
    private static final Duration EVENT_TIMEOUT = Duration.ofSeconds(15);
    private static EtcdServer etcd;
    private final EtcdMetadataStoreProvider provider = new EtcdMetadataStoreProvider();

    @BeforeAll
    static void startEtcd() {
        etcd = EtcdServer.launch();
        EtcdMetadataStoreConformanceTest.warmUp(etcd);
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void malformedUrisAreConfigErrorsWithThePasswordMasked() {
        for (String bad : List.of("etcd://127.0.0.1:notaport", "etcd:///", "etcd://h:1,,h:2", "etcd://h:70000",
                "etcd://h:1/some/path", "etcd://h:1?x=y", "http://h:1")) {
            TransferException e = assertThrows(TransferException.class, () -> provider.open(URI.create(bad), Map.of()),
                    bad);
            assertEquals(ErrorCode.CONFIG, e.code(), e::toString);
            assertTrue(e.getMessage().contains("etcd"), e::getMessage);
        }
        TransferException e = assertThrows(TransferException.class,
                () -> provider.open(URI.create("etcd://root:hunter2@h:nan"), Map.of()));
        assertEquals(ErrorCode.CONFIG, e.code());
        assertTrue(e.getMessage().contains("etcd://root:***@h:nan"), e::getMessage);
        assertFalse(e.getMessage().contains("hunter2"), e::getMessage);
    }

    @Test
    void addressParsingAcceptsMooncakeForms() {
        EtcdAddress a = EtcdAddress.parse(URI.create("etcd://10.0.0.1:2379;10.0.0.2,h3:2380/"));
        assertEquals(List.of("http://10.0.0.1:2379", "http://10.0.0.2:2379", "http://h3:2380"), a.endpoints());
        assertEquals("etcd://10.0.0.1:2379;10.0.0.2,h3:2380", a.masked());
        assertEquals(List.of("http://[::1]:2380"), EtcdAddress.parse(URI.create("etcd://[::1]:2380")).endpoints());
        EtcdAddress auth = EtcdAddress.parse(URI.create("etcd://user:p%40ss@h:1"));
        assertEquals("user", auth.user());
        assertEquals("p@ss", auth.password());
        assertEquals("etcd://user:***@h:1", auth.masked());
    }

    @Test
    void unknownOptionIsAConfigErrorNamingTheKey() {
        ConfigException e = assertThrows(ConfigException.class,
                () -> provider.open(URI.create(etcd.uri()), Map.of("timeot", "1s")));
        assertEquals("metadata.etcd.timeot", e.key());
    }

    @Test
    void aDeadEndpointInTheListIsSkipped() {
        String uri = "etcd://127.0.0.1:" + LoopbackPorts.free() + ",127.0.0.1:" + etcd.port();
        try (MetadataStore store = provider.open(URI.create(uri), Map.of())) {
            store.put("multi/k", bytes("v"), Duration.ZERO);
            assertArrayEquals(bytes("v"), store.get("multi/k").orElseThrow());
            assertEquals(uri, store.uri());
        }
    }

    @Test
    void rePutRevokesTheLeaseItReplaces() throws Exception {
        try (MetadataStore store = provider.open(URI.create(etcd.uri()), Map.of());
                Client raw = Client.builder().endpoints(etcd.clientUrl()).build()) {
            String key = "lease/revoked";
            store.put(key, bytes("one"), Duration.ofSeconds(30));
            long first = leaseOf(raw, key);
            assertNotEquals(0, first, "a put with TTL attaches a lease");
            store.put(key, bytes("two"), Duration.ofSeconds(30));
            long second = leaseOf(raw, key);
            assertNotEquals(first, second);
            assertEquals(-1, ttlOf(raw, first), "the replaced lease should be revoked");
            store.put(key, bytes("three"), Duration.ZERO);
            assertEquals(0, leaseOf(raw, key), "a put without TTL detaches the key from any lease");
            assertEquals(-1, ttlOf(raw, second));
            assertTrue(store.delete(key));
        }
    }

    private static long leaseOf(Client raw, String key) throws Exception {
        return raw.getKVClient().get(ByteSequence.from(key, StandardCharsets.UTF_8)).get(5, TimeUnit.SECONDS)
                .getKvs().getFirst().getLease();
    }

    private static long ttlOf(Client raw, long lease) throws Exception {
        // revocation is asynchronous; poll shortly
        long ttl = 0;
        for (int i = 0; i < 50; i++) {
            ttl = raw.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT).get(5, TimeUnit.SECONDS).getTTL();
            if (ttl == -1) {
                return ttl;
            }
            Thread.sleep(100);
        }
        return ttl;
    }

    @Test
    void etcdDownMeansMetadataUnavailableAndTheSameStoreWorksAfterRestart() throws Exception {
        try (MetadataStore store = provider.open(URI.create(etcd.uri()), Map.of("timeout", "1s"))) {
            store.put("restart/k", bytes("before"), Duration.ZERO);
            WatchRecorder rec = new WatchRecorder();
            MetadataStore.Watch watch = store.watch("restart/k", rec);

            etcd.stop();
            for (Runnable op : List.<Runnable>of(
                    () -> store.get("restart/k"),
                    () -> store.put("restart/k", bytes("while down"), Duration.ZERO),
                    () -> store.delete("restart/k"))) {
                TransferException e = assertThrows(TransferException.class, op::run);
                assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
                assertTrue(e.getMessage().contains(etcd.uri()), e::getMessage);
                assertTrue(e.retryable());
            }

            etcd.restart();
            byte[] value = retryUntilAnswered(() -> store.get("restart/k").orElse(null));
            assertArrayEquals(bytes("before"), value,
                    "etcd keeps its data across a restart, and the put that failed while it was down is not applied late");
            store.put("restart/k", bytes("after"), Duration.ZERO);
            rec.await("restart/k", bytes("after"), EVENT_TIMEOUT);
            watch.close();
        }
    }

    @Test
    void aWatchReportsAChangeMadeWhileItsStreamWasDown() throws Exception {
        try (MetadataStore store = provider.open(URI.create(etcd.uri()), Map.of("timeout", "2s"))) {
            store.put("gap/k", bytes("v1"), Duration.ZERO);
            WatchRecorder rec = new WatchRecorder();
            try (MetadataStore.Watch w = store.watch("gap/k", rec)) {
                etcd.kill();
                etcd.restart();
                // written by another client while this store's watch stream reconnects
                try (MetadataStore other = provider.open(URI.create(etcd.uri()), Map.of())) {
                    other.put("gap/k", bytes("v2"), Duration.ZERO);
                }
                rec.await("gap/k", bytes("v2"), EVENT_TIMEOUT);
            }
        }
    }

    private static <T> T retryUntilAnswered(java.util.function.Supplier<T> op) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                return op.get();
            } catch (TransferException e) {
                assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("store did not recover within 30 s after etcd restarted", e);
                }
                Thread.sleep(200);
            }
        }
    }

    @Test
    void authenticatedEtcdWorksWithTheRightPasswordAndFailsMaskedWithAWrongOne() throws Exception {
        try (EtcdServer secured = EtcdServer.launch()) {
            try (Client raw = Client.builder().endpoints(secured.clientUrl()).build()) {
                ByteSequence root = ByteSequence.from("root", StandardCharsets.UTF_8);
                raw.getAuthClient().userAdd(root, ByteSequence.from("s3cret", StandardCharsets.UTF_8))
                        .get(5, TimeUnit.SECONDS);
                raw.getAuthClient().roleAdd(root).get(5, TimeUnit.SECONDS);
                raw.getAuthClient().userGrantRole(root, root).get(5, TimeUnit.SECONDS);
                raw.getAuthClient().authEnable().get(5, TimeUnit.SECONDS);
            }
            String good = "etcd://root:s3cret@127.0.0.1:" + secured.port();
            try (MetadataStore store = provider.open(URI.create(good), Map.of())) {
                assertEquals("etcd://root:***@127.0.0.1:" + secured.port(), store.uri());
                store.put("auth/k", bytes("v"), Duration.ZERO);
                assertArrayEquals(bytes("v"), store.get("auth/k").orElseThrow());
            }
            String bad = "etcd://root:wrong-pw@127.0.0.1:" + secured.port();
            TransferException e = assertThrows(TransferException.class,
                    () -> provider.open(URI.create(bad), Map.of("connect-timeout", "2s")));
            assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
            assertTrue(e.getMessage().contains("etcd://root:***@127.0.0.1:" + secured.port()), e::getMessage);
            assertFalse(e.getMessage().contains("wrong-pw"), e::getMessage);
            TransferException anonymous = assertThrows(TransferException.class,
                    () -> provider.open(URI.create(secured.uri()), Map.of("connect-timeout", "2s")));
            assertEquals(ErrorCode.METADATA_UNAVAILABLE, anonymous.code(), anonymous::toString);
        }
    }

    @Test
    void aNonTransferExceptionNeverEscapes() {
        try (MetadataStore store = provider.open(URI.create(etcd.uri()), Map.of())) {
            TransferException e = assertThrows(TransferException.class, () -> store.put("", bytes("x"), Duration.ZERO));
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            e = assertThrows(TransferException.class, () -> store.put("k", bytes("x"), Duration.ofSeconds(-1)));
            assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
            assertInstanceOf(TransferException.class,
                    assertThrows(RuntimeException.class, () -> store.watch("k", null)));
        }
    }
}
