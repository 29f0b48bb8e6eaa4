package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * A put that finds no contiguous room in a store of small leased objects and larger evictable ones: it is placed,
 * evicting only larger objects (one large enough alone, else the cheapest window of adjacent ones), never the small
 * ones between; refused only when nothing evictable could make room, naming where the bytes are. Every stream
 * replays to the same state.
 */
class ContiguousRoomTest {
    private static final long KIB = 1024;
    private static final long MIB = 1024 * KIB;

    private final List<LogEntry> log = new ArrayList<>();
    private final MasterState state = new MasterState(MasterConfig.defaults());
    private long now = 1_000_000_000L;

    ContiguousRoomTest() {
        state.journal(log::add);
    }

    private void mount(String id, long size) {
        state.apply(now, new Command.Mount("node", new SegmentSpec(id, "engine-" + id, "h", 1L << 32, size), 1L));
    }

    private Command.PutTicket put(String key, long size) {
        return put(key, size, ReplicateConfig.defaults());
    }

    private Command.PutTicket put(String key, long size, ReplicateConfig cfg) {
        now += 1_000_000; // one ms a put: each object's lease (its put end) is its own
        Command.PutTicket t = state.apply(now, new Command.PutStart("writer", key, size, cfg, "h", false, key.hashCode()));
        state.apply(now, new Command.PutEnd("writer", key, t.putId()));
        return t;
    }

    private void read(String key) {
        state.apply(now, new Command.GrantRead(key));
    }

    private long used() {
        return state.segments().stream().mapToLong(MasterState.SegmentView::used).sum();
    }

    @Test
    void aLargePutEvictsOneLargeObjectNotTheOlderSmallOnesBetweenLeasedOnes() {
        mount("s", 4 * MIB);
        // 1 MiB of 4 KiB objects: the even ones are read (leased), the odd ones never (the least recently leased of
        // all); then three 1 MiB objects, written later. The store is full
        for (int i = 0; i < 256; i++) {
            put("small/" + i, 4 * KIB);
        }
        for (int i = 0; i < 3; i++) {
            put("large/" + i, MIB);
        }
        for (int i = 0; i < 256; i += 2) {
            read("small/" + i);
        }
        assertEquals(4 * MIB, used());

        put("new", MIB);

        for (int i = 0; i < 256; i++) {
            assertTrue(state.exists("small/" + i), "small/" + i + " kept: freeing it makes no room");
        }
        int large = 0;
        for (int i = 0; i < 3; i++) {
            large += state.exists("large/" + i) ? 1 : 0;
        }
        assertEquals(2, large, "exactly one large object evicted");
        assertEquals(1, state.stats().evictedObjects());
        assertEquals(MIB, state.stats().evictedBytes());
        assertReplaysToTheSameState();
    }

    @Test
    void withNoObjectLargeEnoughTheCheapestWindowOfAdjacentOnesGoes() {
        mount("s", 4 * MIB);
        // leased 4 KiB objects fence the segment into runs; no evictable object is 1 MiB alone
        put("fence/0", 4 * KIB);
        put("m0", 768 * KIB);
        put("fence/1", 4 * KIB);
        put("m1", 512 * KIB);
        put("m2", 512 * KIB);
        put("fence/2", 4 * KIB);
        put("m3", 768 * KIB);
        put("fence/3", 4 * KIB);
        put("m4", 760 * KIB);
        put("m5", 760 * KIB);
        assertEquals(4 * MIB, used());
        for (int i = 0; i < 4; i++) {
            read("fence/" + i);
        }

        put("new", MIB);

        // m1 + m2 is the cheapest run of 1 MiB (m4 + m5 would evict 1.5 MiB; m0 and m3 lie between fences)
        assertFalse(state.exists("m1"));
        assertFalse(state.exists("m2"));
        for (String kept : List.of("m0", "m3", "m4", "m5", "fence/0", "fence/1", "fence/2", "fence/3", "new")) {
            assertTrue(state.exists(kept), kept + " kept");
        }
        assertEquals(2, state.stats().evictedObjects());
        assertReplaysToTheSameState();
    }

    @Test
    void aPutIsRefusedOnlyWhenNothingEvictableMakesRoomAndTheRefusalSaysWhy() {
        mount("s", 2 * MIB);
        // leased 4 KiB objects between evictable ones: 1.5 MiB evictable, but in 4 KiB pieces
        for (int i = 0; i < 512; i++) {
            put("small/" + i, 4 * KIB);
        }
        for (int i = 0; i < 512; i += 4) {
            read("small/" + i);
        }
        long objects = state.objectCount();
        long used = used();
        StoreException e = assertThrows(StoreException.class, () -> state.apply(now, new Command.PutStart("writer",
                "big", MIB, ReplicateConfig.defaults(), "h", false, 7)));
        assertEquals(StoreError.NO_AVAILABLE_HANDLE, e.error(), e.getMessage());
        for (String part : List.of("no segment has 1048576 contiguous free bytes for key 'big'", "1 segments",
                "2.0 MiB total", "0 B free", "512.0 KiB leased", "0 B pinned", "0 B in flight",
                "1.5 MiB evictable but fragmented", StoreException.TRANSIENT)) {
            assertTrue(e.getMessage().contains(part), e.getMessage() + " should say " + part);
        }
        assertTrue(e.isTransient());
        assertEquals(objects, state.objectCount(), "nothing evicted for a put that could not be placed");
        assertEquals(used, used());
        assertEquals(0, state.stats().evictedObjects());

        // once the leases end the same put goes through, taking a window of 1 MiB
        now += MasterConfig.defaults().leaseTtl().toNanos() + 1;
        put("big", MIB);
        assertTrue(state.exists("big"));
        assertReplaysToTheSameState();
    }

    @Test
    void aStoreOfHardPinnedObjectsIsNotATransientShortage() {
        mount("s", MIB);
        for (int i = 0; i < 4; i++) {
            put("pinned/" + i, 256 * KIB, ReplicateConfig.defaults().withHardPin());
        }
        StoreException e = assertThrows(StoreException.class, () -> state.apply(now, new Command.PutStart("writer",
                "big", 512 * KIB, ReplicateConfig.defaults(), "h", false, 7)));
        assertTrue(e.getMessage().contains("1.0 MiB pinned"), e.getMessage());
        assertFalse(e.isTransient(), e.getMessage());
    }

    private void assertReplaysToTheSameState() {
        MasterState fresh = new MasterState(MasterConfig.defaults());
        for (LogEntry e : log) {
            fresh.replay(e);
        }
        assertEquals(StateDump.of(state), StateDump.of(fresh));
    }
}
