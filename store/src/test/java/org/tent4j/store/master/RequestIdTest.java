package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.SegmentSpec;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * A mutation sent again with its request id (its first answer lost with a master) is answered as the first time and
 * changes nothing; the windows are part of the state (replay and snapshot give the same decisions).
 */
class RequestIdTest {
    private static <R> Command.Once<R> once(long seq, Command<R> c) {
        return new Command.Once<>("c", seq, c);
    }

    @Test
    void aRepeatedRequestIsAnsweredAsTheFirstTimeAndAppliedOnce() {
        try (StoreMaster m = new StoreMaster(MasterConfig.defaults(), StoreClock.system())) {
            m.apply(once(1, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20))));
            // without the window this second mount is refused SEGMENT_ALREADY_EXISTS
            m.apply(once(1, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20))));
            Command.PutStart start = new Command.PutStart("c", "k", 4096, ReplicateConfig.defaults(), "h", false, 7);
            Command.PutTicket first = m.apply(once(2, start));
            long used = m.segments().getFirst().used();
            List<String> before = StateDump.of(m.state());
            Command.PutTicket again = m.apply(once(2, start));
            assertEquals(first, again);
            assertEquals(used, m.segments().getFirst().used(), "the repeated put start allocated nothing");
            assertEquals(before.subList(1, before.size()), StateDump.of(m.state()).subList(1, before.size()));
            m.apply(once(3, new Command.PutEnd("c", "k", first.putId())));
            m.apply(once(3, new Command.PutEnd("c", "k", first.putId())));
            m.apply(once(4, new Command.Remove("k", false)));
            // without the window: OBJECT_NOT_FOUND, though the remove was applied
            m.apply(once(4, new Command.Remove("k", false)));
            assertEquals(0, m.state().objectCount());
            // a refusal is recorded too: the same request gets the same refusal, a new one is applied
            StoreException refused = assertThrows(StoreException.class, () -> m.apply(once(5, new Command.Remove("k", false))));
            Command.PutTicket second = m.apply(once(6, new Command.PutStart("c", "k", 4096, ReplicateConfig.defaults(), "h", false, 8)));
            m.apply(once(7, new Command.PutEnd("c", "k", second.putId())));
            StoreException again5 = assertThrows(StoreException.class, () -> m.apply(once(5, new Command.Remove("k", false))));
            assertEquals(refused.getMessage(), again5.getMessage());
            assertEquals(1, m.state().objectCount(), "the repeated remove did not remove the new put");
        }
    }

    @Test
    void aRequestOlderThanTheWindowIsRefusedNamingIt() {
        try (StoreMaster m = new StoreMaster(MasterConfig.defaults(), StoreClock.system())) {
            for (int i = 1; i <= RequestIds.WINDOW + 1; i++) {
                long seq = i;
                assertThrows(StoreException.class, () -> m.apply(once(seq, new Command.Remove("k" + seq, false))));
            }
            StoreException old = assertThrows(StoreException.class, () -> m.apply(once(1, new Command.Remove("k1", false))));
            assertEquals(StoreError.INVALID_PARAMS, old.error());
            assertTrue(old.getMessage().contains("request 1 of client c"), old.getMessage());
        }
    }

    @Test
    void windowsSurviveASnapshotAndReplayAlike() {
        MasterState live = new MasterState(MasterConfig.defaults());
        List<LogEntry> journal = new java.util.ArrayList<>();
        live.journal(journal::add);
        live.apply(1, once(1, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20))));
        Command.PutStart start = new Command.PutStart("c", "k", 4096, ReplicateConfig.defaults(), "h", false, 7);
        Command.PutTicket t = live.apply(2, once(2, start));
        live.apply(3, once(3, new Command.Commit("c", List.of(), List.of(), new Command.Reserve(64 << 10, 1, "h"), 9)));
        MasterState restored = MasterState.restore(MasterConfig.defaults(), live.snapshot());
        assertEquals(StateDump.of(live), StateDump.of(restored));
        assertEquals(t, restored.apply(4, once(2, start)), "the restored window answers the repeated put start");
        MasterState replayed = new MasterState(MasterConfig.defaults());
        journal.forEach(replayed::replay);
        assertEquals(StateDump.of(live), StateDump.of(replayed));
        assertTrue(StateDump.of(live).stream().anyMatch(l -> l.startsWith("request c#3 ")), StateDump.of(live).toString());
    }

    /**
     * Over the wire: a put start sent again with the request id it carried (as the client does after its master
     * broke) gets the first answer, allocating nothing more, and the put then ends as usual.
     */
    @Test
    void aPutStartSentAgainOverTheWireIsAnsweredNotApplied() throws Exception {
        try (org.tent4j.store.rpc.MasterServer server = org.tent4j.store.rpc.MasterServer.start(MasterConfig.defaults(),
                StoreClock.system(), "127.0.0.1", 0, 0);
             org.tent4j.store.rpc.MasterClient client = new org.tent4j.store.rpc.MasterClient("127.0.0.1:" + server.port(),
                     java.time.Duration.ofSeconds(5))) {
            String id = client.register();
            client.mount(id, new SegmentSpec("seg", "engine", "host", 0, 1 << 20));
            var req = org.tent4j.store.rpc.MasterClient.putStartRequest(id, "k", 4096, ReplicateConfig.defaults(), "host",
                    false).toBuilder().setRequestSeq(1_000_000).build();
            var first = client.putStart(req);
            long used = server.master().segments().getFirst().used();
            // without the window: OBJECT_IN_FLIGHT (the first put of k is in flight)
            var again = client.putStart(req);
            assertEquals(first.getPutId(), again.getPutId());
            assertEquals(first.getReplicasList(), again.getReplicasList());
            assertEquals(used, server.master().segments().getFirst().used());
            client.putEnd(id, "k", first.getPutId());
            assertEquals(4096, client.size("k"));
            assertEquals(1, server.master().state().objectCount());
        }
    }

    @Test
    void onlyMutationsCarryARequestIdAndItEncodes() {
        assertThrows(IllegalArgumentException.class, () -> new Command.Once<>("c", 1, new Command.Tick()));
        Command.Once<Void> c = new Command.Once<>("c", 9, new Command.Remove("k", true));
        assertEquals(List.of(c), CommandCodec.decode(CommandCodec.encode(new CommandCodec.Entry(1, 2, List.of(c)))).commands());
    }
}
