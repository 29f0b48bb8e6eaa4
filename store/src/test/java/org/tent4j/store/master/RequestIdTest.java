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
            m.apply(once(1, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20), 1L)));
            // without the window this second mount is refused SEGMENT_ALREADY_EXISTS
            m.apply(once(1, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20), 1L)));
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

    /** Leave and the bulk removals, each sent twice with one request id, are applied once and answered alike. */
    @Test
    void leaveAndBulkRemovalsAreAppliedOnce() {
        try (StoreMaster m = new StoreMaster(MasterConfig.defaults(), StoreClock.system())) {
            m.apply(once(1, new Command.Leave("c")));
            m.apply(once(2, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20), 1L)));
            m.apply(once(1, new Command.Leave("c")));
            // without the window the repeated leave unmounts the segment mounted after the first
            assertEquals(List.of("s"), m.segments().stream().map(MasterState.SegmentView::id).toList());
            put(m, 3, "a/1");
            put(m, 5, "a/2");
            assertEquals(2, m.apply(once(7, new Command.RemoveKeys(List.of("a/1", "a/2"), false))));
            put(m, 8, "a/1");
            // answered the first count, and the key put since is still there (without the window: removed)
            assertEquals(2, m.apply(once(7, new Command.RemoveKeys(List.of("a/1"), false))));
            assertTrue(m.exists("a/1"));
            assertEquals(1, m.apply(once(10, new Command.RemoveAll(false))));
            put(m, 11, "b");
            assertEquals(1, m.apply(once(10, new Command.RemoveAll(false))));
            assertTrue(m.exists("b"), "the repeated removal of all did not remove what was put since");
        }
    }

    /** A put of {@code key} as requests {@code seq} (start) and {@code seq + 1} (end). */
    private static void put(StoreMaster m, long seq, String key) {
        Command.PutTicket t = m.apply(once(seq, new Command.PutStart("c", key, 4096, ReplicateConfig.defaults(), "h", false, seq)));
        m.apply(once(seq + 1, new Command.PutEnd("c", key, t.putId())));
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
        live.apply(1, once(1, new Command.Mount("c", new SegmentSpec("s", "e", "h", 0, 1 << 20), 1L)));
        Command.PutStart start = new Command.PutStart("c", "k", 4096, ReplicateConfig.defaults(), "h", false, 7);
        Command.PutTicket t = live.apply(2, once(2, start));
        live.apply(3, once(3, new Command.Commit("c", List.of(), List.of(), new Command.Reserve(64 << 10, 1, "h"), 9)));
        live.apply(4, once(4, new Command.RemoveAll(false)));
        MasterState restored = MasterState.restore(MasterConfig.defaults(), live.snapshot());
        assertEquals(StateDump.of(live), StateDump.of(restored));
        assertEquals(t, restored.apply(5, once(2, start)), "the restored window answers the repeated put start");
        assertEquals(0, restored.apply(5, once(4, new Command.RemoveAll(false))), "and the removal's count");
        MasterState replayed = new MasterState(MasterConfig.defaults());
        journal.forEach(replayed::replay);
        assertEquals(StateDump.of(live), StateDump.of(replayed));
        assertTrue(StateDump.of(live).stream().anyMatch(l -> l.startsWith("request c#3 ")), StateDump.of(live).toString());
        assertTrue(StateDump.of(live).stream().anyMatch(l -> l.startsWith("request c#4 ") && l.endsWith("removed 0")),
                StateDump.of(live).toString());
    }

    /**
     * Version 3 snapshots cannot hold a count in a window, 4 and 5 no disk segment's freed ranges, 6 no segment's
     * incarnation, 7 no free slot in the segment table, 8 no client-credential key: each is refused
     * naming the versions read, never misread (9 is still read: WriteThroughTest).
     */
    @Test
    void anOlderSnapshotIsRefusedNamingItsVersion() {
        for (int old = 3; old <= 8; old++) {
            byte[] snapshot = new MasterState(MasterConfig.defaults()).snapshot();
            java.nio.ByteBuffer.wrap(snapshot).putInt(4, old);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> MasterState.restore(MasterConfig.defaults(), snapshot));
            assertTrue(e.getMessage().contains("master snapshot version " + old + ", this master reads only versions 9 to 11"),
                    e.getMessage());
        }
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
            client.mount(id, new SegmentSpec("seg", "engine", "host", 0, 1 << 20), 1L);
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

    /**
     * Over the wire, each batch call and bulk removal sent again with the request ids it carried (as the client does
     * after its master broke) gets its first answer and changes nothing more: batch put start, end and revoke, batch
     * remove, removal by regex and of all, leave.
     */
    @Test
    void batchCallsSentAgainOverTheWireAreAnsweredNotApplied() throws Exception {
        try (org.tent4j.store.rpc.MasterServer server = org.tent4j.store.rpc.MasterServer.start(MasterConfig.defaults(),
                StoreClock.system(), "127.0.0.1", 0, 0);
             org.tent4j.store.rpc.MasterClient client = new org.tent4j.store.rpc.MasterClient("127.0.0.1:" + server.port(),
                     java.time.Duration.ofSeconds(5))) {
            String id = client.register();
            client.mount(id, new SegmentSpec("seg", "engine", "host", 0, 1 << 20), 1L);
            List<org.tent4j.store.proto.PutStartRequest> starts = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                starts.add(org.tent4j.store.rpc.MasterClient.putStartRequest(id, "b/" + i, 4096, ReplicateConfig.defaults(),
                        "host", false).toBuilder().setRequestSeq(1_000 + i).build());
            }
            var first = client.batchPutStart(starts);
            long used = server.master().segments().getFirst().used();
            // without the window every item is refused OBJECT_IN_FLIGHT
            assertEquals(first, client.batchPutStart(starts));
            assertEquals(used, server.master().segments().getFirst().used(), "the repeated batch allocated nothing");
            List<org.tent4j.store.proto.PutEndRequest> ends = new java.util.ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ends.add(org.tent4j.store.rpc.MasterClient.endRequest(id, "b/" + i, first.get(i).getPutId()).toBuilder()
                        .setRequestSeq(2_000 + i).build());
            }
            var revoke = List.of(org.tent4j.store.rpc.MasterClient.endRequest(id, "b/3", first.get(3).getPutId())
                    .toBuilder().setRequestSeq(2_003).build());
            for (int round = 0; round < 2; round++) {
                // the second round: without the window each item is refused (the put is no longer in flight)
                client.batchPutEnd(ends).forEach(st -> assertEquals(0, st.getCode(), st.getMessage()));
                client.batchPutRevoke(revoke).forEach(st -> assertEquals(0, st.getCode(), st.getMessage()));
            }
            assertEquals(3, server.master().state().objectCount());
            assertEquals(3 * 4096, server.master().segments().getFirst().used(), "the revoked put's space came back once");

            io.grpc.ManagedChannel channel = io.grpc.ManagedChannelBuilder.forAddress("127.0.0.1", server.port())
                    .usePlaintext().build();
            try {
                var bare = org.tent4j.store.proto.MasterGrpc.newBlockingStub(channel);
                var reg = bare.register(org.tent4j.store.proto.Empty.getDefaultInstance());
                io.grpc.Metadata credential = new io.grpc.Metadata();
                credential.put(io.grpc.Metadata.Key.of("tent4j-store-client", io.grpc.Metadata.ASCII_STRING_MARSHALLER),
                        reg.getClientId() + ":" + java.util.HexFormat.of().formatHex(reg.getCredential().toByteArray()));
                var raw = bare.withInterceptors(io.grpc.stub.MetadataUtils.newAttachHeadersInterceptor(credential));
                var batchRemove = org.tent4j.store.proto.BatchRemoveRequest.newBuilder().addAllKeys(List.of("b/0", "b/1"))
                        .setFirstRequestSeq(10).build();
                for (int round = 0; round < 2; round++) {
                    // without the window the second round's items are refused OBJECT_NOT_FOUND
                    raw.batchRemove(batchRemove).getItemsList().forEach(st -> assertEquals(0, st.getCode(), st.getMessage()));
                }
                var byRegex = org.tent4j.store.proto.RemoveByRegexRequest.newBuilder().setRegex("b/.*").setRequestSeq(20).build();
                assertEquals(1, raw.removeByRegex(byRegex).getCount());
                wirePut(client, id, "b/4");
                // answered the first count, and what was put since stays (without the window: 1, b/4 removed)
                assertEquals(1, raw.removeByRegex(byRegex).getCount());
                var all = org.tent4j.store.proto.RemoveAllRequest.newBuilder().setRequestSeq(21).build();
                assertEquals(1, raw.removeAll(all).getCount());
                wirePut(client, id, "b/5");
                assertEquals(1, raw.removeAll(all).getCount());
                assertTrue(client.exists("b/5"), "the repeated removal of all did not remove what was put since");

                var leave = org.tent4j.store.proto.LeaveRequest.newBuilder().setClientId(reg.getClientId()).setRequestSeq(30).build();
                assertEquals(0, raw.leave(leave).getCode());
                assertEquals(0, raw.mountSegment(org.tent4j.store.proto.MountRequest.newBuilder().setClientId(reg.getClientId())
                        .setSegment(org.tent4j.store.rpc.Wire.segment(new SegmentSpec("seg2", "engine2", "host", 0, 1 << 20)))
                        .setRequestSeq(31).setIncarnation(7).build()).getCode());
                assertEquals(0, raw.leave(leave).getCode());
                // without the window the repeated leave unmounted seg2
                assertEquals(List.of("seg", "seg2"), server.master().segments().stream().map(MasterState.SegmentView::id).sorted().toList());
            } finally {
                channel.shutdownNow();
            }
        }
    }

    /**
     * The client's side: each batch call and bulk removal whose answer was lost after the master applied it (its
     * stream then broke) is sent again by the client to the next master with the same request ids and gets the first
     * answer; the state changed once. Both addresses lead to one master, as a new leader holds what the old one
     * committed.
     */
    @Test
    void theClientSendsAgainWhatBrokeAfterItWasAppliedAndItIsAppliedOnce() throws Exception {
        try (org.tent4j.store.rpc.MasterServer server = org.tent4j.store.rpc.MasterServer.start(MasterConfig.defaults(),
                StoreClock.system(), "127.0.0.1", 0, 0);
             AnswerLosingProxy a = new AnswerLosingProxy(server.port());
             AnswerLosingProxy b = new AnswerLosingProxy(server.port());
             org.tent4j.store.rpc.MasterClient client = new org.tent4j.store.rpc.MasterClient(a.address() + "," + b.address(),
                     java.time.Duration.ofSeconds(10))) {
            List<LogEntry> journal = new java.util.concurrent.CopyOnWriteArrayList<>();
            server.master().state().journal(journal::add);
            java.util.Map<String, AnswerLosingProxy> proxies = java.util.Map.of(a.address(), a, b.address(), b);
            String id = client.register();
            client.mount(id, new SegmentSpec("seg", "engine", "host", 0, 1 << 20), 1L);
            List<org.tent4j.store.proto.PutStartRequest> starts = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                starts.add(org.tent4j.store.rpc.MasterClient.putStartRequest(id, "b/" + i, 4096, ReplicateConfig.defaults(),
                        "host", false));
            }
            // without the request ids the resent items are refused OBJECT_IN_FLIGHT (and without the resend, RPC_FAIL)
            var tickets = lost(client, proxies, journal, Command.PutStart.class, () -> client.batchPutStart(starts));
            tickets.forEach(t -> assertEquals(0, t.getStatus().getCode(), t.getStatus().getMessage()));
            assertEquals(4 * 4096, server.master().segments().getFirst().used(), "each put start allocated once");
            List<org.tent4j.store.proto.PutEndRequest> ends = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ends.add(org.tent4j.store.rpc.MasterClient.endRequest(id, "b/" + i, tickets.get(i).getPutId()));
            }
            lost(client, proxies, journal, Command.PutEnd.class, () -> client.batchPutEnd(ends.subList(0, 3)))
                    .forEach(st -> assertEquals(0, st.getCode(), st.getMessage()));
            lost(client, proxies, journal, Command.PutRevoke.class, () -> client.batchPutRevoke(ends.subList(3, 4)))
                    .forEach(st -> assertEquals(0, st.getCode(), st.getMessage()));
            assertEquals(3, server.master().state().objectCount());
            assertEquals(3 * 4096, server.master().segments().getFirst().used());
            lost(client, proxies, journal, Command.Remove.class, () -> client.batchRemove(List.of("b/0"), false))
                    .forEach(st -> assertEquals(0, st.getCode(), st.getMessage()));
            assertEquals(1L, lost(client, proxies, journal, Command.RemoveKeys.class, () -> client.removeByRegex("b/1", false)));
            assertEquals(1L, lost(client, proxies, journal, Command.RemoveAll.class, () -> client.removeAll(false)));
            assertEquals(0, server.master().state().objectCount());
            assertEquals(0, server.master().segments().getFirst().used());
            lost(client, proxies, journal, Command.Leave.class, () -> {
                client.leave(id);
                return null;
            });
            assertTrue(server.master().segments().isEmpty(), "the leave unmounted the client's segment");
        }
    }

    /**
     * {@code call}'s answer lost: the proxy the client talks to drops the master's bytes from the moment the call is
     * sent until the master journaled a {@code kind} request, then cuts the connection; the call's answer.
     */
    private static <T> T lost(org.tent4j.store.rpc.MasterClient client, java.util.Map<String, AnswerLosingProxy> proxies,
                              List<LogEntry> journal, Class<?> kind, java.util.function.Supplier<T> call) throws Exception {
        client.serviceReady();
        client.exists("warm");
        AnswerLosingProxy proxy = proxies.get(client.address());
        int from = journal.size();
        proxy.loseAnswers();
        var answer = java.util.concurrent.CompletableFuture.supplyAsync(call);
        long deadline = System.nanoTime() + 5_000_000_000L;
        // a copy, not a subList view: the master journals ticks meanwhile, and a view of a list that grew throws
        while (List.copyOf(journal).stream().skip(from).noneMatch(e -> e.command() instanceof Command.Once<?> o
                && kind.isInstance(o.command()))) {
            assertTrue(System.nanoTime() < deadline, "the master applied no " + kind.getSimpleName() + " within 5 s");
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        proxy.cut();
        return answer.get(10, java.util.concurrent.TimeUnit.SECONDS);
    }

    private static void wirePut(org.tent4j.store.rpc.MasterClient client, String id, String key) {
        var t = client.putStart(org.tent4j.store.rpc.MasterClient.putStartRequest(id, key, 4096, ReplicateConfig.defaults(),
                "host", false));
        client.putEnd(id, key, t.getPutId());
    }

    @Test
    void onlyMutationsCarryARequestIdAndItEncodes() {
        assertThrows(IllegalArgumentException.class, () -> new Command.Once<>("c", 1, new Command.Tick()));
        Command.Once<Void> c = new Command.Once<>("c", 9, new Command.Remove("k", true));
        assertEquals(List.of(c), CommandCodec.decode(CommandCodec.encode(new CommandCodec.Entry(1, 2, List.of(c)))).commands());
    }
}
