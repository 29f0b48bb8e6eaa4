package org.tent4j.testkit.metadata;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;

/**
 * The behaviour every {@link MetadataStore} plugin must show. A plugin's test extends this class, starts its real
 * server (for example with {@link org.tent4j.testkit.servers.EtcdServer}) in a {@code @BeforeAll}, and implements
 * {@link #open()}, {@link #provider()} and {@link #unreachableUri()}.
 *
 * <p>Every test works under its own key prefix, so one server can serve the whole class. Watch delivery is checked as
 * the SPI promises it: at least once and in order per key, so repeats of the same state are tolerated but the distinct
 * states must arrive in the order they were written. Each change is awaited before the next one is made, because a
 * store that learns of a change and then reads the value (Redis keyspace events, polling) may legitimately report only
 * the latest of two quick changes.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
public abstract class MetadataStoreConformance {
    /** TTL of the expiry cases: etcd's smallest lease TTL with default settings. */
    protected static final Duration TTL = Duration.ofSeconds(2);
    /** How long a watch event may take to arrive. */
    protected static final Duration EVENT_TIMEOUT = Duration.ofSeconds(10);
    private static final int MIB = 1 << 20;

    /** The store under test, opened before each test by {@link #open()} and closed after it. */
    protected MetadataStore store;
    /** Key prefix unique to the running test. */
    protected String prefix;

    /** For a subclass that names the plugin and its server. */
    public MetadataStoreConformance() {
    }


    /**
     * Opens a store on the plugin's running server.
     *
     * @return an open store; the test closes it
     */
    protected abstract MetadataStore open();

    /**
     * The plugin's provider (the test checks it is registered for {@link ServiceLoader}).
     *
     * @return the provider
     */
    protected abstract MetadataStoreProvider provider();

    /**
     * A URI of the plugin's scheme where nothing listens, e.g. a free loopback port.
     *
     * @return the URI
     */
    protected abstract URI unreachableUri();

    /**
     * Options to open {@link #unreachableUri()} with, e.g. a short connect timeout.
     *
     * @return options given under {@code metadata.<scheme>.}; none by default
     */
    protected Map<String, String> unreachableOptions() {
        return Map.of();
    }

    /**
     * A password inside the URIs this test uses, which must never appear in {@link MetadataStore#uri()} or messages.
     *
     * @return the secret, or {@code null} (the default) when the URIs hold none
     */
    protected String secret() {
        return null;
    }

    /**
     * How long after its TTL a key may still be visible (lease and sweep granularity of the backend).
     *
     * @return 5 s by default
     */
    protected Duration expirySlack() {
        return Duration.ofSeconds(5);
    }

    @BeforeEach
    void openStore(TestInfo info) {
        String method = info.getTestMethod().map(m -> m.getName()).orElse("test");
        prefix = "conformance/" + method + "-" + Long.toHexString(ThreadLocalRandom.current().nextLong()) + "/";
        store = open();
        assertNotNull(store, "open() returned null");
    }

    @AfterEach
    void closeStore() {
        if (store != null) {
            store.close();
        }
    }

    /**
     * The key {@code name} under this test's own prefix, so tests never see each other's keys.
     *
     * @param name a key relative to the prefix
     * @return the full key
     */
    protected String key(String name) {
        return prefix + name;
    }

    /**
     * UTF-8 bytes of a string.
     *
     * @param s the text
     * @return its bytes
     */
    protected static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // ---------------------------------------------------------------------------------------------- provider

    @Test
    void providerIsRegisteredForServiceLoader() {
        MetadataStoreProvider p = provider();
        assertEquals(MetadataStoreProvider.SPI_VERSION, p.spiVersion());
        assertFalse(p.schemes().isEmpty(), "a provider serves at least one scheme");
        for (String s : p.schemes()) {
            assertEquals(s.toLowerCase(Locale.ROOT), s, "schemes are lower case");
        }
        assertTrue(p.availability().isAvailable(), () -> "provider unavailable: " + p.availability());
        boolean found = ServiceLoader.load(MetadataStoreProvider.class).stream()
                .anyMatch(h -> h.type().equals(p.getClass()));
        assertTrue(found, "META-INF/services/" + MetadataStoreProvider.class.getName() + " does not list "
                + p.getClass().getName());
    }

    @Test
    void uriNamesTheStoreWithoutSecrets() {
        String uri = store.uri();
        assertNotNull(uri);
        assertTrue(provider().schemes().stream().anyMatch(s -> uri.startsWith(s + "://")),
                () -> "uri() should start with the scheme: " + uri);
        if (secret() != null) {
            assertFalse(uri.contains(secret()), () -> "uri() shows the password: " + uri);
        }
    }

    // ---------------------------------------------------------------------------------------------- key-value

    @Test
    void putGetDelete() {
        String k = key("a");
        byte[] v = bytes("{\"name\":\"a\",\"n\":1}");
        store.put(k, v, Duration.ZERO);
        assertArrayEquals(v, store.get(k).orElseThrow(() -> new AssertionError("put value not found")));
        assertTrue(store.delete(k), "delete of an existing key returns true");
        assertEquals(Optional.empty(), store.get(k).map(Arrays::toString));
        assertFalse(store.delete(k), "delete of a missing key returns false");
    }

    @Test
    void getOfMissingKeyIsEmpty() {
        assertTrue(store.get(key("never-written")).isEmpty());
        assertFalse(store.delete(key("never-written")));
    }

    @Test
    void overwriteReplacesTheWholeValue() {
        String k = key("ow");
        store.put(k, bytes("a much longer first value"), Duration.ZERO);
        store.put(k, bytes("short"), Duration.ZERO);
        assertArrayEquals(bytes("short"), store.get(k).orElseThrow());
        store.put(k, new byte[0], Duration.ZERO);
        assertArrayEquals(new byte[0], store.get(k).orElseThrow(() -> new AssertionError("empty value is not absent")));
    }

    @Test
    void largeValuesRoundTrip() {
        String k = key("large");
        SplittableRandom rnd = new SplittableRandom(42);
        for (int round = 0; round < 2; round++) {
            byte[] v = new byte[MIB];
            for (int i = 0; i < v.length; i++) {
                v[i] = (byte) rnd.nextInt(256);
            }
            store.put(k, v, Duration.ZERO);
            byte[] back = store.get(k).orElseThrow();
            assertEquals(v.length, back.length);
            assertArrayEquals(v, back, "1 MiB value changed in round " + round);
        }
        assertTrue(store.delete(k));
    }

    @Test
    void keysWithSlashesUnicodeAndReservedCharacters() {
        List<String> names = List.of(
                "a/b/c",
                "a/b",
                "a/b/",
                "/leading",
                "ключ/数据/🚀",
                "space and ?query=1&x=y#frag%20+plus",
                "x".repeat(200));
        for (int i = 0; i < names.size(); i++) {
            store.put(key(names.get(i)), bytes("value-" + i), Duration.ZERO);
        }
        for (int i = 0; i < names.size(); i++) {
            String k = key(names.get(i));
            assertArrayEquals(bytes("value-" + i), store.get(k).orElseThrow(() -> new AssertionError("missing " + k)),
                    "key " + k);
        }
        assertTrue(store.delete(key("a/b")));
        assertTrue(store.get(key("a/b")).isEmpty());
        assertArrayEquals(bytes("value-0"), store.get(key("a/b/c")).orElseThrow(),
                "deleting a/b must not touch a/b/c");
        for (String n : names) {
            store.delete(key(n));
        }
    }

    // ---------------------------------------------------------------------------------------------- watch

    @Test
    void watchSeesPutsAndDeleteInOrder() throws Exception {
        String k = key("w");
        WatchRecorder rec = new WatchRecorder();
        try (MetadataStore.Watch w = store.watch(k, rec)) {
            int i = rec.await(k, write(k, "v1"), 0, EVENT_TIMEOUT);
            i = rec.await(k, write(k, "v2"), i + 1, EVENT_TIMEOUT);
            assertTrue(store.delete(k));
            rec.await(k, null, i + 1, EVENT_TIMEOUT);
        }
        assertEquals(List.of(new WatchRecorder.Event(k, bytes("v1")), new WatchRecorder.Event(k, bytes("v2")),
                new WatchRecorder.Event(k, null)), rec.distinctInOrder());
        String caller = Thread.currentThread().getName();
        assertFalse(rec.threadNames().contains(caller), "the listener must run on a store thread, not the writer's: "
                + rec.threadNames());
    }

    private byte[] write(String k, String value) {
        byte[] v = bytes(value);
        store.put(k, v, Duration.ZERO);
        return v;
    }

    @Test
    void watchSeesTtlExpiryAsNull() throws Exception {
        String k = key("wttl");
        WatchRecorder rec = new WatchRecorder();
        try (MetadataStore.Watch w = store.watch(k, rec)) {
            byte[] v = bytes("ephemeral");
            store.put(k, v, TTL);
            int i = rec.await(k, v, 0, EVENT_TIMEOUT);
            rec.await(k, null, i + 1, TTL.plus(expirySlack()).plus(EVENT_TIMEOUT));
        }
        assertTrue(store.get(k).isEmpty());
        assertEquals(List.of(new WatchRecorder.Event(k, bytes("ephemeral")), new WatchRecorder.Event(k, null)),
                rec.distinctInOrder());
    }

    @Test
    void watchIsForExactlyOneKey() throws Exception {
        String k = key("exact");
        WatchRecorder rec = new WatchRecorder();
        try (MetadataStore.Watch w = store.watch(k, rec)) {
            store.put(k + "/child", bytes("child"), Duration.ZERO);
            store.put(k + "2", bytes("sibling"), Duration.ZERO);
            store.put(k.substring(0, k.length() - 1), bytes("parent-ish"), Duration.ZERO);
            byte[] v = write(k, "mine");
            rec.await(k, v, EVENT_TIMEOUT);
        }
        for (WatchRecorder.Event e : rec.events()) {
            assertEquals(k, e.key(), "watch on one key reported another: " + rec.events());
            assertArrayEquals(bytes("mine"), e.value(), "watch reported another key's value: " + rec.events());
        }
    }

    @Test
    void twoWatchesOnOneKeyBothSeeChangesAndAClosedOneStops() throws Exception {
        String k = key("two");
        WatchRecorder first = new WatchRecorder();
        WatchRecorder second = new WatchRecorder();
        MetadataStore.Watch w1 = store.watch(k, first);
        try (MetadataStore.Watch w2 = store.watch(k, second)) {
            byte[] v1 = write(k, "one");
            first.await(k, v1, EVENT_TIMEOUT);
            second.await(k, v1, EVENT_TIMEOUT);
            w1.close();
            w1.close(); // closing twice is harmless
            int seenByFirst = first.size();
            byte[] v2 = write(k, "two");
            second.await(k, v2, EVENT_TIMEOUT);
            // the second watch got it, so the first would have too if it were still open; give its thread a moment
            Thread.sleep(300);
            List<WatchRecorder.Event> late = first.events().subList(seenByFirst, first.size());
            assertFalse(late.contains(new WatchRecorder.Event(k, v2)), "closed watch still delivers: " + late);
        }
    }

    // ---------------------------------------------------------------------------------------------- ttl

    @Test
    void keyWithTtlDisappearsByItself() throws Exception {
        String k = key("ttl");
        store.put(k, bytes("soon gone"), TTL);
        assertArrayEquals(bytes("soon gone"), store.get(k).orElseThrow(() -> new AssertionError(
                "key with TTL " + TTL + " already gone right after put")));
        Duration bound = TTL.plus(expirySlack());
        long deadline = System.nanoTime() + bound.toNanos();
        while (store.get(k).isPresent()) {
            if (System.nanoTime() > deadline) {
                fail("key put with TTL " + TTL + " still present after " + bound);
            }
            Thread.sleep(100);
        }
        assertFalse(store.delete(k), "expired key is gone for delete too");
    }

    @Test
    void rePutBeforeExpiryKeepsTheKeyAndRePutWithoutTtlClearsExpiry() throws Exception {
        String kept = key("kept-alive");
        String made = key("made-permanent");
        store.put(kept, bytes("alive"), TTL);
        store.put(made, bytes("ttl first"), TTL);
        store.put(made, bytes("permanent now"), Duration.ZERO);
        long interval = TTL.toMillis() / 4;
        // re-put well before each expiry, as a publisher keeping its descriptor alive would, for over twice the TTL
        long end = System.nanoTime() + TTL.toNanos() * 2 + TimeUnit.MILLISECONDS.toNanos(500);
        int rounds = 0;
        while (System.nanoTime() < end) {
            Thread.sleep(interval);
            assertTrue(store.get(kept).isPresent(), "key re-put every " + interval + " ms with TTL " + TTL
                    + " vanished after " + rounds + " re-puts");
            store.put(kept, bytes("alive"), TTL);
            rounds++;
        }
        assertArrayEquals(bytes("permanent now"), store.get(made).orElseThrow(() -> new AssertionError(
                "a key re-put with Duration.ZERO still expired with its earlier TTL")));
        assertTrue(store.delete(kept));
        assertTrue(store.delete(made));
    }

    // ---------------------------------------------------------------------------------------------- concurrency

    @Test
    void concurrentWritersLeaveAConsistentStore() throws Exception {
        int threads = 8;
        int rounds = 20;
        String shared = key("shared");
        CyclicBarrier start = new CyclicBarrier(threads);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    start.await();
                    for (int r = 0; r < rounds; r++) {
                        store.put(key("own-" + thread), StampedValues.stamped(thread, r), Duration.ZERO);
                        store.put(shared, StampedValues.stamped(thread, r), Duration.ZERO);
                        byte[] seen = store.get(shared).orElseThrow(() -> new AssertionError("shared key vanished"));
                        StampedValues.check(seen); // never a torn or mixed value
                    }
                    return null;
                }));
            }
            for (Future<?> f : futures) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (int t = 0; t < threads; t++) {
            assertArrayEquals(StampedValues.stamped(t, rounds - 1), store.get(key("own-" + t)).orElseThrow(),
                    "thread " + t + "'s own key does not hold its last write");
        }
        int[] last = StampedValues.check(store.get(shared).orElseThrow());
        // the write applied last is its writer's last write, since each writer's puts are sequential
        assertEquals(rounds - 1, last[1], "shared key holds an older write of thread " + last[0]);
    }

    // ---------------------------------------------------------------------------------------------- failures

    @Test
    void unreachableStoreFailsFastWithMetadataUnavailableNamingTheUri() {
        URI uri = unreachableUri();
        TransferException e = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> assertThrows(
                TransferException.class, () -> {
                    MetadataStore s = provider().open(uri, unreachableOptions());
                    // a lazy store must fail on first use instead
                    try (s) {
                        s.get(key("probe"));
                    }
                }), "opening an unreachable store must fail, not hang");
        assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
        assertMessageNamesUri(e, uri);
    }

    /**
     * Asserts that {@code e}'s message names {@code uri} (scheme and host:port) and shows no secret.
     *
     * @param e   the failure
     * @param uri the URI that was opened
     */
    protected void assertMessageNamesUri(TransferException e, URI uri) {
        String m = String.valueOf(e.getMessage());
        String raw = uri.toString();
        String scheme = raw.substring(0, raw.indexOf("://") + 3);
        String rest = raw.substring(scheme.length());
        int at = rest.lastIndexOf('@');
        String hostPart = (at >= 0 ? rest.substring(at + 1) : rest);
        int slash = hostPart.indexOf('/');
        if (slash >= 0) {
            hostPart = hostPart.substring(0, slash);
        }
        assertTrue(m.contains(scheme), () -> "message does not name the store URI (" + scheme + "): " + m);
        String host = hostPart;
        assertTrue(m.contains(host), () -> "message does not name the store address (" + host + "): " + m);
        if (secret() != null) {
            assertFalse(m.contains(secret()), () -> "message shows the password: " + m);
        }
    }

    @Test
    void closedStoreFailsInsteadOfHanging() {
        String k = key("closed");
        store.put(k, bytes("x"), Duration.ZERO);
        MetadataStore.Watch w = store.watch(k, new WatchRecorder());
        store.close();
        List<Supplier<Object>> ops = List.of(
                () -> store.get(k),
                () -> {
                    store.put(k, bytes("y"), Duration.ZERO);
                    return null;
                },
                () -> store.delete(k),
                () -> store.watch(k, new WatchRecorder()));
        for (Supplier<Object> op : ops) {
            TransferException e = assertTimeoutPreemptively(Duration.ofSeconds(15),
                    () -> assertThrows(TransferException.class, op::get), "operation on a closed store must not hang");
            assertEquals(ErrorCode.METADATA_UNAVAILABLE, e.code(), e::toString);
            assertTrue(e.getMessage().contains(store.uri()), () -> "message does not name " + store.uri() + ": " + e);
        }
        assertTimeoutPreemptively(Duration.ofSeconds(15), () -> {
            w.close();
            store.close();
        }, "closing a watch of a closed store, or the store again, must not hang");
    }
}
