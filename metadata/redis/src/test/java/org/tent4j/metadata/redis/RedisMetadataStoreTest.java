package org.tent4j.metadata.redis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.testkit.metadata.WatchRecorder;
import org.tent4j.testkit.servers.RedisServer;

import redis.clients.jedis.Jedis;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RedisMetadataStoreTest {
    private static final Duration EVENT_TIMEOUT = Duration.ofSeconds(15);
    private static final String PASSWORD = "hunter2-redis";
    private static RedisServer withPassword;
    private final RedisMetadataStoreProvider provider = new RedisMetadataStoreProvider();

    @BeforeAll
    static void startRedis() {
        withPassword = RedisServer.builder().password(PASSWORD).launch();
    }

    @AfterAll
    static void stopRedis() {
        if (withPassword != null) {
            withPassword.close();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void passwordOnlyUriWorksAndIsMasked() {
        try (MetadataStore store = provider.open(URI.create(withPassword.uriWithCredentials()), Map.of())) {
            assertEquals("redis://:***@127.0.0.1:" + withPassword.port(), store.uri());
            store.put("pw/k", bytes("v"), Duration.ZERO);
            assertArrayEquals(bytes("v"), store.get("pw/k").orElseThrow());
        }
    }

    @Test
    void wrongPasswordIsMetadataUnavailableWithTheUriMasked() {
        for (String uri : List.of("redis://:wrong-pass@127.0.0.1:" + withPassword.port(),
                "redis://someone:wrong-pass@127.0.0.1:" + withPassword.port() + "/0")) {
            TransferException e = assertThrows(TransferException.class, () -> provider.open(URI.create(uri), Map.of()));
            assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
            assertTrue(e.getMessage().contains("127.0.0.1:" + withPassword.port()), e::getMessage);
            assertTrue(e.getMessage().contains(":***@"), e::getMessage);
            assertTrue(e.getMessage().contains("authentication failed"), e::getMessage);
            assertFalse(e.getMessage().contains("wrong-pass"), e::getMessage);
        }
    }

    @Test
    void missingPasswordIsMetadataUnavailable() {
        TransferException e = assertThrows(TransferException.class,
                () -> provider.open(URI.create(withPassword.uri()), Map.of()));
        assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code());
        assertTrue(e.getMessage().contains(withPassword.uri()), e::getMessage);
        assertTrue(e.getMessage().contains("NOAUTH"), e::getMessage);
    }

    @Test
    void malformedUrisAreConfigErrorsWithThePasswordMasked() {
        for (String bad : List.of("redis://127.0.0.1:6379/notadb", "redis:///0", "redis://h:1/0?x=1",
                "etcd://h:1", "redis://u:topsecret@h:1/db")) {
            TransferException e = assertThrows(TransferException.class, () -> provider.open(URI.create(bad), Map.of()),
                    bad);
            assertEquals(ErrorCode.CONFIG, e.code(), e::toString);
            assertFalse(e.getMessage().contains("topsecret"), e::getMessage);
        }
        ConfigException e = assertThrows(ConfigException.class,
                () -> provider.open(URI.create(withPassword.uri()), Map.of("pool-size", "0")));
        assertEquals("metadata.redis.pool-size", e.key());
    }

    @Test
    void addressParsing() {
        RedisAddress a = RedisAddress.parse(URI.create("redis://user:p%40ss@example.org:6380/3"));
        assertEquals("example.org", a.host());
        assertEquals(6380, a.port());
        assertEquals("user", a.user());
        assertEquals("p@ss", a.password());
        assertEquals(3, a.database());
        assertEquals("redis://user:***@example.org:6380/3", a.masked());
        RedisAddress d = RedisAddress.parse(URI.create("redis://example.org"));
        assertEquals(6379, d.port());
        assertEquals(0, d.database());
        assertEquals(null, d.password());
        assertEquals("redis://example.org:6379", d.masked());
        assertEquals("p", RedisAddress.parse(URI.create("redis://p@h:1")).password());
    }

    @Test
    void keyspaceFlagsAreMergedNotReplaced() {
        assertEquals("Kg$xe", RedisWatches.mergeEventFlags(""));
        assertEquals("AKE", RedisWatches.mergeEventFlags("AKE"));
        assertEquals("AEK", RedisWatches.mergeEventFlags("AE"));
        assertEquals("Elg$Kxe", RedisWatches.mergeEventFlags("Elg$"));
    }

    @Test
    void firstWatchEnablesKeyspaceNotificationsOnTheServer() throws Exception {
        try (MetadataStore store = provider.open(URI.create(withPassword.uriWithCredentials()), Map.of());
                Jedis raw = new Jedis("127.0.0.1", withPassword.port())) {
            raw.auth(PASSWORD);
            raw.configSet("notify-keyspace-events", "El");
            WatchRecorder rec = new WatchRecorder();
            try (MetadataStore.Watch w = store.watch("notify/k", rec)) {
                String flags = raw.configGet("notify-keyspace-events").get("notify-keyspace-events");
                for (char c : "Kg$xeEl".toCharArray()) {
                    assertTrue(flags.indexOf(c) >= 0, "flag " + c + " missing from '" + flags + "'");
                }
                // a change by another client arrives
                raw.set("notify/k", "from raw");
                rec.await("notify/k", bytes("from raw"), EVENT_TIMEOUT);
            }
        }
    }

    @Test
    void aDatabaseOtherThanZeroKeepsKeysApartAndIsWatchedOnItsOwnChannel() throws Exception {
        String base = withPassword.uriWithCredentials();
        try (MetadataStore db3 = provider.open(URI.create(base + "/3"), Map.of());
                MetadataStore db0 = provider.open(URI.create(base), Map.of())) {
            assertTrue(db3.uri().endsWith("/3"), db3.uri());
            WatchRecorder in3 = new WatchRecorder();
            WatchRecorder in0 = new WatchRecorder();
            try (MetadataStore.Watch w3 = db3.watch("db/k", in3); MetadataStore.Watch w0 = db0.watch("db/k", in0)) {
                db3.put("db/k", bytes("three"), Duration.ZERO);
                in3.await("db/k", bytes("three"), EVENT_TIMEOUT);
                assertTrue(db0.get("db/k").isEmpty(), "database 0 does not see database 3's key");
                db0.put("db/k", bytes("zero"), Duration.ZERO);
                in0.await("db/k", bytes("zero"), EVENT_TIMEOUT);
            }
            assertEquals(List.of(new WatchRecorder.Event("db/k", bytes("three"))), in3.events(),
                    "the watch on database 3 must not see database 0's change");
        }
    }

    @Test
    void pollingCanBeChosenExplicitly() throws Exception {
        try (MetadataStore store = provider.open(URI.create(withPassword.uriWithCredentials()),
                Map.of("keyspace-notifications", "false", "watch-poll-interval", "100ms"))) {
            WatchRecorder rec = new WatchRecorder();
            try (MetadataStore.Watch w = store.watch("poll/k", rec)) {
                store.put("poll/k", bytes("p1"), Duration.ZERO);
                int i = rec.await("poll/k", bytes("p1"), EVENT_TIMEOUT);
                store.delete("poll/k");
                rec.await("poll/k", null, i + 1, EVENT_TIMEOUT);
            }
        }
    }

    @Test
    void serverRestartMeansUnavailableThenTheSameStoreRecoversAndWatchesSeeTheLoss() throws Exception {
        try (RedisServer redis = RedisServer.launch();
                MetadataStore store = provider.open(URI.create(redis.uri()), Map.of("timeout", "2s"))) {
            store.put("restart/k", bytes("before"), Duration.ZERO);
            WatchRecorder rec = new WatchRecorder();
            MetadataStore.Watch watch = store.watch("restart/k", rec);

            redis.stop();
            for (Supplier<Object> op : List.<Supplier<Object>>of(
                    () -> store.get("restart/k"),
                    () -> {
                        store.put("restart/k", bytes("while down"), Duration.ZERO);
                        return null;
                    },
                    () -> store.delete("restart/k"))) {
                TransferException e = assertThrows(TransferException.class, op::get);
                assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
                assertTrue(e.getMessage().contains(redis.uri()), e::getMessage);
            }

            redis.restart();
            // redis ran with --save '': the restarted server is empty, and the watch learns that on reconnect
            assertTrue(store.get("restart/k").isEmpty(), "the same store works again right after the restart");
            rec.await("restart/k", null, EVENT_TIMEOUT);
            store.put("restart/k", bytes("after"), Duration.ZERO);
            rec.await("restart/k", bytes("after"), EVENT_TIMEOUT);
            try (Jedis raw = new Jedis("127.0.0.1", redis.port())) {
                String flags = raw.configGet("notify-keyspace-events").get("notify-keyspace-events");
                assertTrue(flags.contains("K"), "notifications re-enabled after the restart: '" + flags + "'");
            }
            watch.close();
        }
    }

    @Test
    void appendOnlyServerKeepsDataAcrossRestart() {
        try (RedisServer redis = RedisServer.builder().appendOnly().launch();
                MetadataStore store = provider.open(URI.create(redis.uri()), Map.of())) {
            store.put("aof/k", bytes("durable"), Duration.ZERO);
            redis.restart();
            assertArrayEquals(bytes("durable"), store.get("aof/k").orElseThrow());
        }
    }
}
