package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicaLocation;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.Tier;
import org.tent4j.store.master.Command.Adopted;

/**
 * A restarted node's disk index at the master, in virtual time: a key with no object, or with the object the node
 * offloaded (same put id), adopts the reported replica; another object under the key, a range not free and a bad
 * report are refused and leave the state as it was. A disk range an object lets go of is handed to its node as a
 * freed range until the node confirms it. Every step is a command: a replay and a snapshot give the same state.
 */
class DiskAdoptionTest {
    private static final long SIZE = 4000;
    private long now = 1_000_000_000L;
    private final List<LogEntry> journal = new ArrayList<>();
    private final MasterState state = new MasterState(MasterConfig.defaults());

    private <R> R apply(Command<R> c) {
        now += 1_000;
        journal.add(new LogEntry(journal.size() + 1, now, c));
        return state.apply(now, c);
    }

    private void mount(String node, String disk) {
        apply(new Command.Mount(node, new SegmentSpec(node + "-mem", node, "h", 1L << 40, 1 << 20), 1L));
        apply(new Command.Mount(node, new SegmentSpec(disk, node, "h", 1L << 50, 1 << 20, Tier.DISK, "/d/x.disk"), 1L));
    }

    private long put(String key) {
        Command.PutTicket t = apply(new Command.PutStart("w", key, SIZE, ReplicateConfig.defaults(), "h", false, key.hashCode()));
        apply(new Command.PutEnd("w", key, t.putId()));
        return t.putId();
    }

    private List<ReplicaLocation> replicas(String key) {
        return apply(new Command.GrantRead(key)).replicas();
    }

    @Test
    void adoptsTheSameObjectOrAFreeKeyAndRefusesTheRest() {
        mount("a", "disk-1");
        long same = put("same");
        long replaced = put("replaced");
        apply(new Command.Remove("replaced", true));
        long newer = put("replaced"); // removed and put again: another object under the key
        List<String> before = StateDump.of(state);

        List<Long> refused = apply(new Command.AdoptDiskReplicas("a", "disk-1", List.of(
                new Adopted("same", 0, SIZE, 0xABCL, same),
                new Adopted("gone", 4096, SIZE, 0xDEFL, 77),
                new Adopted("replaced", 8192, SIZE, 1, replaced),
                new Adopted("overlap", 4096, SIZE, 2, 78), // the range "gone" just took
                new Adopted("unaligned", 12288 + 64, SIZE, 3, 79),
                new Adopted("offdisk", 1 << 20, SIZE, 4, 80))));
        assertEquals(List.of(8192L, 4096L, 12288L + 64, 1L << 20), refused);
        assertFalse(state.exists("overlap") || state.exists("unaligned") || state.exists("offdisk"));

        List<ReplicaLocation> s = replicas("same");
        assertEquals(2, s.size(), "its memory replica and the adopted disk one: " + s);
        assertEquals(Tier.DISK, s.get(1).tier());
        assertEquals(0, s.get(1).fileOffset());
        assertEquals(0xABCL, s.get(1).crc32c());
        List<ReplicaLocation> g = replicas("gone");
        assertEquals(1, g.size());
        assertEquals(4096, g.get(0).fileOffset());
        assertEquals(0xDEFL, g.get(0).crc32c());
        assertEquals(SIZE, apply(new Command.GrantRead("gone")).size());
        assertEquals(List.of(Tier.MEMORY), replicas("replaced").stream().map(ReplicaLocation::tier).toList(),
                "the newer object keeps its replicas");
        assertTrue(newer > replaced);
        assertTrue(put("next") > 77, "put ids stay above an adopted object's");
        assertTrue(!before.equals(StateDump.of(state)));

        // the state is the commands': a replay and a snapshot agree
        MasterState replayed = new MasterState(MasterConfig.defaults());
        journal.forEach(replayed::replay);
        assertEquals(StateDump.of(state), StateDump.of(replayed));
        assertEquals(StateDump.of(state), StateDump.of(MasterState.restore(MasterConfig.defaults(), state.snapshot())));
    }

    @Test
    void aDiskRangeLetGoIsHandedToItsNodeUntilConfirmed() {
        mount("a", "disk-1");
        apply(new Command.AdoptDiskReplicas("a", "disk-1", List.of(new Adopted("k1", 0, SIZE, 1, 5),
                new Adopted("k2", 8192, SIZE, 2, 6))));
        assertEquals(Command.DiskWork.NONE.freed(), apply(new Command.TakeDiskWork("a", 64, 0)).freed());
        now += 60_000_000_000L; // past the read leases
        apply(new Command.Remove("k1", false));
        apply(new Command.Remove("k2", false));
        assertTrue(state.hasFreedFor("a", 0));
        Command.DiskWork w = apply(new Command.TakeDiskWork("a", 64, 0));
        assertEquals(List.of(new Command.Freed(1, 0, 4096), new Command.Freed(2, 8192, 4096)), w.freed());
        assertEquals(w.freed(), apply(new Command.TakeDiskWork("a", 64, 0)).freed(), "sent again until confirmed");
        assertEquals(List.of(w.freed().get(1)), apply(new Command.TakeDiskWork("a", 64, 1)).freed());
        MasterState restored = MasterState.restore(MasterConfig.defaults(), state.snapshot());
        assertEquals(StateDump.of(state), StateDump.of(restored));
        assertTrue(restored.hasFreedFor("a", 1), "a snapshot keeps what the node has not confirmed");
        apply(new Command.TakeDiskWork("a", 64, 2));
        assertFalse(state.hasFreedFor("a", 2), "confirmed: nothing left to send");
        MasterState replayed = new MasterState(MasterConfig.defaults());
        journal.forEach(replayed::replay);
        assertEquals(StateDump.of(state), StateDump.of(replayed));
    }

    /** A disk range parked (a leased object removed) when a snapshot is taken is handed to its node once, not again. */
    @Test
    void aDiskRangeParkedAtASnapshotIsHandedToItsNodeOnceAfterARestore() {
        mount("a", "disk-1");
        apply(new Command.AdoptDiskReplicas("a", "disk-1", List.of(new Adopted("k", 0, SIZE, 1, 5))));
        replicas("k"); // leased: the removal parks its disk range
        apply(new Command.Remove("k", true));
        assertEquals(List.of(new Command.Freed(1, 0, 4096)), apply(new Command.TakeDiskWork("a", 64, 0)).freed());
        MasterState restored = MasterState.restore(MasterConfig.defaults(), state.snapshot());
        assertEquals(StateDump.of(state), StateDump.of(restored));
        assertEquals(List.of(new Command.Freed(1, 0, 4096)), restored.apply(now, new Command.TakeDiskWork("a", 64, 0)).freed());
    }
}
