package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * Calls proposed while {@link GroupCommit#IN_FLIGHT_ALONE} entries (one in a group) wait for the applier are merged
 * into one entry, applied in the order they came, each answered with its own commands' results; on a real Ratis log of
 * one master.
 */
class GroupCommitTest {
    @TempDir
    Path dir;

    @Test
    void callsThatWaitForAnEntryAreMergedIntoOneAndEachGetsItsOwnResultsInOrder() throws Exception {
        try (DurableLog log = DurableLog.open(MasterConfig.defaults(), dir, "m1", List.of(),
                new DurableLog.Settings(1_000_000, false, 60_000))) {
            CountDownLatch held = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            List<String> applied = new CopyOnWriteArrayList<>();
            log.state().journal(e -> {
                if (e.command() instanceof Command.GrantRead g) {
                    applied.add(g.key());
                    if (g.key().equals("held")) {
                        held.countDown();
                        try {
                            release.await(30, TimeUnit.SECONDS);
                        } catch (InterruptedException interrupted) {
                            Thread.currentThread().interrupt();
                        }
                    }
                }
            });
            long entries = log.entriesApplied();
            List<CompletableFuture<List<Object>>> calls = new ArrayList<>();
            calls.add(log.submit(1, List.of(new Command.GrantRead("held"))));
            assertTrue(held.await(10, TimeUnit.SECONDS), "the first entry never reached the applier");
            // IN_FLIGHT_ALONE - 1 more go out as entries of their own; the ten after them wait, each a call of two reads
            int alone = GroupCommit.IN_FLIGHT_ALONE - 1;
            for (int i = 0; i < alone + 10; i++) {
                calls.add(log.submit(2 + i, List.of(new Command.GrantRead("k" + i + "a"),
                        new Command.GrantRead("k" + i + "b"))));
            }
            assertFalse(calls.stream().anyMatch(CompletableFuture::isDone), "a call was answered before it was applied");
            release.countDown();
            CompletableFuture.allOf(calls.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);

            assertEquals(1 + alone + 1, log.entriesApplied() - entries,
                    "the held entry, the ones proposed beside it, and one entry for the ten calls that waited");
            List<String> order = new ArrayList<>(List.of("held"));
            for (int i = 0; i < alone + 10; i++) {
                order.add("k" + i + "a");
                order.add("k" + i + "b");
            }
            assertEquals(order, applied, "applied in the order the calls came");
            assertEquals(1, calls.getFirst().join().size());
            for (int i = 1; i < calls.size(); i++) {
                List<Object> results = calls.get(i).join();
                assertEquals(2, results.size(), "call " + i + " gets its own two results: " + results);
                for (Object r : results) {
                    // reads of keys nobody put: each refused on its own
                    assertEquals(StoreError.OBJECT_NOT_FOUND, assertInstanceOf(StoreException.class, r).error());
                }
            }
        }
    }

    @Test
    void callsMergedIntoAnEntryThatIsNotCommittedAllFail() throws Exception {
        List<CompletableFuture<List<Object>>> entries = new CopyOnWriteArrayList<>();
        List<Integer> sizes = new CopyOnWriteArrayList<>();
        GroupCommit group = new GroupCommit((now, commands) -> {
            CompletableFuture<List<Object>> f = new CompletableFuture<>();
            entries.add(f);
            sizes.add(commands.size());
            return f;
        }, new LogMetrics(java.time.InstantSource.system()), GroupCommit.IN_FLIGHT_ALONE);
        List<CompletableFuture<List<Object>>> calls = new ArrayList<>();
        for (int i = 0; i < GroupCommit.IN_FLIGHT_ALONE + 3; i++) {
            calls.add(group.submit(i, List.of(new Command.GrantRead("k" + i))));
        }
        assertEquals(GroupCommit.IN_FLIGHT_ALONE, entries.size(), "the calls past the limit wait");
        StoreException notLeader = new StoreException(StoreError.NOT_LEADER, "deposed");
        entries.getFirst().completeExceptionally(notLeader);
        // the three that waited went out together when the first entry ended
        assertEquals(GroupCommit.IN_FLIGHT_ALONE + 1, entries.size());
        assertEquals(3, sizes.getLast());
        entries.getLast().completeExceptionally(notLeader);
        for (CompletableFuture<List<Object>> c : List.of(calls.getFirst(), calls.get(calls.size() - 3),
                calls.getLast())) {
            assertTrue(c.isCompletedExceptionally());
            assertEquals(notLeader, assertInstanceOf(java.util.concurrent.CompletionException.class,
                    org.junit.jupiter.api.Assertions.assertThrows(Exception.class, c::join)).getCause());
        }
        assertFalse(calls.get(1).isDone(), "a call of another entry is not failed with it");
    }

    @Test
    void aCallThatCannotBeProposedFailsAndFreesItsPlace() {
        List<CompletableFuture<List<Object>>> entries = new CopyOnWriteArrayList<>();
        GroupCommit group = new GroupCommit((now, commands) -> {
            if (commands.getFirst() instanceof Command.GrantRead g && g.key().equals("bad")) {
                throw new IllegalArgumentException("cannot encode " + g.key());
            }
            CompletableFuture<List<Object>> f = new CompletableFuture<>();
            entries.add(f);
            return f;
        }, new LogMetrics(java.time.InstantSource.system()), GroupCommit.IN_FLIGHT_ALONE);
        for (int i = 0; i < GroupCommit.IN_FLIGHT_ALONE + 2; i++) {
            CompletableFuture<List<Object>> bad = group.submit(i, List.of(new Command.GrantRead("bad")));
            Exception e = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, bad::join);
            assertInstanceOf(IllegalArgumentException.class, e.getCause(), e.toString());
        }
        CompletableFuture<List<Object>> good = group.submit(9, List.of(new Command.GrantRead("good")));
        assertEquals(1, entries.size(), "refused proposals kept no place in flight");
        entries.getFirst().complete(List.of("ok"));
        assertEquals(List.of("ok"), good.join());
    }

    @Test
    void aGroupsLeaderProposesOneEntryAtATimeAndEverythingElseWaitsForIt() {
        List<CompletableFuture<List<Object>>> entries = new CopyOnWriteArrayList<>();
        List<List<Command<?>>> proposed = new CopyOnWriteArrayList<>();
        GroupCommit group = new GroupCommit((now, commands) -> {
            CompletableFuture<List<Object>> f = new CompletableFuture<>();
            entries.add(f);
            proposed.add(commands);
            return f;
        }, new LogMetrics(java.time.InstantSource.system()), GroupCommit.IN_FLIGHT_GROUP);
        CompletableFuture<List<Object>> first = group.submit(1, List.of(new Command.GrantRead("a")));
        List<CompletableFuture<List<Object>>> waiting = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            waiting.add(group.submit(2 + i, List.of(new Command.GrantRead("w" + i))));
        }
        assertEquals(1, entries.size(), "nothing else is proposed while the first entry is in flight");
        entries.getFirst().complete(List.of("a-done"));
        assertEquals(List.of("a-done"), first.join());
        assertEquals(2, entries.size(), "the five that waited went out as one entry");
        assertEquals(List.of("w0", "w1", "w2", "w3", "w4"),
                proposed.getLast().stream().map(c -> ((Command.GrantRead) c).key()).toList());
        assertFalse(waiting.getFirst().isDone());
        entries.getLast().complete(List.of("r0", "r1", "r2", "r3", "r4"));
        for (int i = 0; i < 5; i++) {
            assertEquals(List.of("r" + i), waiting.get(i).join(), "each call gets its own result");
        }
    }
}
