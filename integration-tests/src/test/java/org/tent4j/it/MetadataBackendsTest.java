package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceLoader;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.tent4j.api.ConfigException;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransferRequest;
import org.tent4j.api.TransferState;
import org.tent4j.api.TransferStatus;
import org.tent4j.metadata.http.HttpMetadataServer;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.Poll;
import org.tent4j.testkit.servers.EtcdServer;
import org.tent4j.testkit.servers.RedisServer;

/**
 * Engines finding each other through real etcd, Redis and HTTP metadata servers: across processes, through a store
 * restart, with failover between stores, and with a crashed engine's descriptor expiring on its own.
 */
class MetadataBackendsTest {
    private final List<AutoCloseable> open = new ArrayList<>();

    <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            try {
                open.get(i).close();
            } catch (Exception e) {
                // the next resource still gets closed
            }
        }
    }

    private String server(String backend) {
        return switch (backend) {
            case "etcd" -> keep(EtcdServer.launch()).uri();
            case "redis" -> keep(RedisServer.launch()).uri();
            case "http" -> keep(HttpMetadataServer.start("127.0.0.1", 0)).endpoint();
            default -> throw new IllegalArgumentException(backend);
        };
    }

    private static EngineConfig.Builder cfg(String uri, String name) {
        return TransferEndToEndTest.cfg().set(EngineConfig.METADATA_URI, uri).set(EngineConfig.SEGMENT_NAME, name)
                .set("metadata.ttl", "3s");
    }

    private static MetadataStore raw(String uri) {
        URI u = URI.create(uri);
        for (MetadataStoreProvider p : ServiceLoader.load(MetadataStoreProvider.class)) {
            if (p.schemes().contains(u.getScheme())) {
                return p.open(u, Map.of());
            }
        }
        throw new AssertionError("no provider for " + uri);
    }

    private static void roundTrip(TransferEngine initiator, SegmentHandle seg, TargetProcess.Child child, RegisteredMemory local) throws Exception {
        MemorySegment src = local.segment().asSlice(0, 1 << 20);
        TransferStatus w = initiator.transfer(TransferRequest.write(src, seg, child.address));
        assertEquals(TransferState.COMPLETED, w.state(), w.message());
        assertEquals(TargetProcess.crc(src), child.crc(0, 1 << 20));
        MemorySegment dst = local.segment().asSlice(1 << 20, 1 << 20);
        TransferStatus r = initiator.transfer(TransferRequest.read(dst, seg, child.address + 7));
        assertEquals(TransferState.COMPLETED, r.state(), r.message());
        assertEquals(child.crc(7, 1 << 20), TargetProcess.crc(dst));
    }

    @ParameterizedTest
    @ValueSource(strings = {"etcd", "redis", "http"})
    void twoEnginesInTwoProcessesFindEachOtherThroughTheStore(String backend) throws Exception {
        String uri = server(backend);
        TargetProcess.Child child = keep(new TargetProcess.Child(4 << 20, EngineConfig.METADATA_URI + "=" + uri,
                EngineConfig.SEGMENT_NAME + "=prefill-" + backend));
        TransferEngine initiator = keep(TransferEngine.create(cfg(uri, "decode-" + backend).build()));
        RegisteredMemory local = initiator.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        TargetProcess.pattern(local.segment(), 3);
        SegmentHandle seg = initiator.openSegment("prefill-" + backend);
        roundTrip(initiator, seg, child, local);
        try (MetadataStore store = raw(uri)) {
            assertTrue(store.get("tent4j/default/segments/prefill-" + backend).isPresent());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"etcd", "redis"})
    void transfersContinueWhileTheStoreIsDownAndDescriptorsComeBackAfterARestart(String backend) throws Exception {
        EtcdServer etcd = backend.equals("etcd") ? keep(EtcdServer.launch()) : null;
        RedisServer redis = backend.equals("redis") ? keep(RedisServer.launch()) : null;
        String uri = etcd != null ? etcd.uri() : redis.uri();
        TargetProcess.Child child = keep(new TargetProcess.Child(4 << 20, EngineConfig.METADATA_URI + "=" + uri,
                EngineConfig.SEGMENT_NAME + "=target", "metadata.ttl=3s"));
        TransferEngine initiator = keep(TransferEngine.create(cfg(uri, "initiator").build()));
        RegisteredMemory local = initiator.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment("target");

        if (etcd != null) {
            etcd.kill();
        } else {
            redis.kill();
        }
        roundTrip(initiator, seg, child, local); // the open segment does not need the store

        if (etcd != null) {
            etcd.restart();
        } else {
            redis.restart(); // comes back empty
        }
        try (MetadataStore store = raw(uri)) {
            Poll.until("both engines re-published their descriptors", Duration.ofSeconds(20), Duration.ofMillis(100),
                    () -> store.get("tent4j/default/segments/target").isPresent() && store.get("tent4j/default/segments/initiator").isPresent());
        }
        TransferEngine late = keep(TransferEngine.create(cfg(uri, "late").build()));
        RegisteredMemory lateLocal = late.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        roundTrip(late, late.openSegment("target"), child, lateLocal);
    }

    @Test
    void withTwoStoresTheFirstKilledANewEngineIsStillFoundThroughTheSecond() throws Exception {
        EtcdServer etcd = keep(EtcdServer.launch());
        RedisServer redis = keep(RedisServer.launch());
        String both = etcd.uri() + "," + redis.uri();
        etcd.kill();
        // A dead etcd costs each engine its probe at start and every call one timeout before Redis answers: 1 s,
        // not the default 5 s, so the test spends its time on failover rather than on waiting.
        String probe = "metadata.etcd.connect-timeout=1s";
        String call = "metadata.etcd.timeout=1s";
        TargetProcess.Child child = keep(new TargetProcess.Child(4 << 20, EngineConfig.METADATA_URI + "=" + both,
                EngineConfig.SEGMENT_NAME + "=survivor", "metadata.ttl=3s", probe, call));
        TransferEngine initiator = keep(TransferEngine.create(cfg(both, "finder").set("metadata.etcd.connect-timeout", "1s")
                .set("metadata.etcd.timeout", "1s").build()));
        RegisteredMemory local = initiator.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        roundTrip(initiator, initiator.openSegment("survivor"), child, local);

        etcd.restart();
        try (MetadataStore store = raw(etcd.uri())) {
            Poll.until("the restarted first store is used again", Duration.ofSeconds(20), Duration.ofMillis(100),
                    () -> store.get("tent4j/default/segments/survivor").isPresent());
        }
    }

    @Test
    void aCrashedEnginesDescriptorExpiresAndItsSegmentIsReportedGone() throws Exception {
        String uri = server("etcd");
        TargetProcess.Child child = keep(new TargetProcess.Child(4 << 20, EngineConfig.METADATA_URI + "=" + uri,
                EngineConfig.SEGMENT_NAME + "=doomed", "metadata.ttl=2s"));
        TransferEngine initiator = keep(TransferEngine.create(cfg(uri, "watcher").build()));
        RegisteredMemory local = initiator.allocate(4 << 20, Location.CPU, Permission.READ_WRITE);
        SegmentHandle seg = initiator.openSegment("doomed");
        roundTrip(initiator, seg, child, local);
        child.kill();
        try (MetadataStore store = raw(uri)) {
            Poll.until("the crashed engine's descriptor expired", Duration.ofSeconds(15), Duration.ofMillis(100),
                    () -> store.get("tent4j/default/segments/doomed").isEmpty());
        }
        TransferStatus s = initiator.transfer(TransferRequest.builder(Opcode.WRITE, local.segment().asSlice(0, 4096), seg, child.address)
                .require("tcp").build());
        assertEquals(TransferState.FAILED, s.state(), String.valueOf(s));
        assertThrows(TransferException.class, () -> initiator.openSegment("nobody-" + System.nanoTime()));
    }

    @Test
    void badUrisWrongPasswordsAndUnreachableHostsNameTheUriAndTheCause() throws Exception {
        ConfigException bad = assertThrows(ConfigException.class,
                () -> TransferEngine.create(cfg("zookeeper://127.0.0.1:2181", "x").build()));
        assertEquals(EngineConfig.METADATA_URI, bad.key());
        assertTrue(bad.getMessage().contains("zookeeper://127.0.0.1:2181"), bad.getMessage());

        RedisServer secured = keep(RedisServer.builder().password("s3cret").launch());
        String wrong = "redis://:wrong@127.0.0.1:" + secured.port();
        TransferException auth = assertThrows(TransferException.class, () -> TransferEngine.create(cfg(wrong, "x").build()));
        assertEquals(ErrorCode.METADATA_UNAVAILABLE, auth.code());
        assertTrue(auth.getMessage().contains("127.0.0.1:" + secured.port()), auth.getMessage());
        assertFalse(auth.getMessage().contains("wrong"), "the password leaked: " + auth.getMessage());

        int dead;
        try (var s = new java.net.ServerSocket(0)) {
            dead = s.getLocalPort();
        }
        for (String uri : List.of("etcd://127.0.0.1:" + dead, "redis://127.0.0.1:" + dead, "http://127.0.0.1:" + dead + "/metadata")) {
            TransferException e = assertThrows(TransferException.class, () -> TransferEngine.create(cfg(uri, "x").build()), uri);
            assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("127.0.0.1:" + dead), e.getMessage());
        }
    }
}
