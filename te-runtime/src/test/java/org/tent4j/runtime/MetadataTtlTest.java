package org.tent4j.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.tent4j.runtime.metadata.InMemoryMetadataStore;
import org.tent4j.testkit.ManualClock;

/** Descriptor leases expire in the store's time, tested in virtual time: no sleeping for a TTL to pass. */
class MetadataTtlTest {
    @Test
    void anEntryLivesExactlyItsTtlAndItsWatchersAreToldWhenItLapses() {
        ManualClock clock = new ManualClock();
        InMemoryMetadataStore store = InMemoryMetadataStore.open(URI.create("memory://ttl-" + System.nanoTime()), clock);
        List<byte[]> seen = new ArrayList<>();
        store.watch("k", (key, value) -> seen.add(value));
        store.put("k", new byte[]{1}, Duration.ofSeconds(10));
        store.put("forever", new byte[]{2}, Duration.ZERO);
        clock.advance(Duration.ofMillis(9_999));
        assertArrayEquals(new byte[]{1}, store.get("k").orElseThrow());
        clock.advance(Duration.ofMillis(2));
        assertTrue(store.get("k").isEmpty(), "expired once its TTL passed");
        assertEquals(2, seen.size());
        assertEquals(null, seen.get(1), "watchers are told the key is gone");
        // a refresh (the engine's keep-alive) starts a new lease
        store.put("k", new byte[]{3}, Duration.ofSeconds(10));
        clock.advance(Duration.ofSeconds(9));
        assertArrayEquals(new byte[]{3}, store.get("k").orElseThrow());
        clock.advance(Duration.ofDays(365));
        assertArrayEquals(new byte[]{2}, store.get("forever").orElseThrow());
        store.close();
    }
}
