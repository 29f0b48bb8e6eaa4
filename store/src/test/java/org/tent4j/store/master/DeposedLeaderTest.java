package org.tent4j.store.master;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.tent4j.store.master.MasterGroup.OBJECTS;
import static org.tent4j.store.master.MasterGroup.TERM;
import static org.tent4j.store.master.MasterGroup.number;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;
import org.tent4j.store.client.PutResult;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.proto.CountResponse;
import org.tent4j.store.proto.Empty;
import org.tent4j.store.proto.MasterGrpc;
import org.tent4j.store.proto.RegisterResponse;
import org.tent4j.store.proto.RemoveByRegexRequest;
import org.tent4j.testkit.Poll;

/**
 * Fencing with real processes: three masters in child JVMs, the leader SIGSTOPped until another is elected and puts
 * and a removal land there, then SIGCONTed. The reads it was sent while stopped (exists, size, replica lists of an
 * object put and of one removed on the new leader: {@link StaleReads}) are refused {@code NOT_LEADER} or answered as
 * the new leader would, never from its stale state. Every call it gets from then on (a removal of every object, sent
 * by a client pinned to it) is refused {@code NOT_LEADER}, never acknowledged; its state catches up with the new
 * leader's, and every acknowledged object reads back CRC-equal.
 */
class DeposedLeaderTest {
    @TempDir
    Path dir;

    @Test
    void aDeposedLeaderAcknowledgesNothingAfterItWakes() throws Exception {
        List<TransferEngine> engines = new ArrayList<>();
        StoreClient node = null;
        StoreClient user = null;
        ManagedChannel pinned = null;
        MasterGroup group = MasterGroup.start(dir);
        try {
            List<String> rpc = group.rpc();

            node = StoreClient.builder(DurableValues.engine(engines), rpc).heartbeatInterval(Duration.ofMillis(200)).connect();
            node.contribute(4 << 20);
            user = StoreClient.builder(DurableValues.engine(engines), rpc).stagingBytes(1 << 20)
                    .rpcTimeout(Duration.ofSeconds(2)).connect();
            List<byte[]> before = DurableValues.put(user, "before/", 20, 3333);
            // a client that talks to the leader alone, registered while it leads (the group's key makes its
            // credential good on every master); leadership may have moved since the group started, and may move
            // while this registers on a busy box: then the master it asked refuses, and the new leader is asked
            int leader;
            long term;
            RegisterResponse reg;
            long registerBy = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (true) {
                leader = group.awaitLeader(-1, 0);
                term = number(TERM, group.health(leader));
                pinned = NettyChannelBuilder.forTarget(rpc.get(leader)).usePlaintext().build();
                try {
                    reg = MasterGrpc.newBlockingStub(pinned).withDeadlineAfter(5, TimeUnit.SECONDS)
                            .register(Empty.getDefaultInstance());
                    break;
                } catch (StatusRuntimeException notLeader) {
                    pinned.shutdownNow();
                    pinned = null;
                    assertTrue(System.nanoTime() < registerBy && String.valueOf(notLeader.getStatus().getDescription())
                            .startsWith("NOT_LEADER"), "no leader took a Register within 20 s: " + notLeader);
                }
            }
            Metadata credential = new Metadata();
            credential.put(Metadata.Key.of("tent4j-store-client", Metadata.ASCII_STRING_MARSHALLER),
                    reg.getClientId() + ":" + HexFormat.of().formatHex(reg.getCredential().toByteArray()));
            MasterGrpc.MasterBlockingStub stale = MasterGrpc.newBlockingStub(pinned)
                    .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(credential));

            // a stream opened while it leads, as a client's is: the follower gate checks a call only when it starts
            StaleReads reads = new StaleReads(pinned, credential, "before/0");

            group.signal(leader, "STOP");
            int newLeader = group.awaitLeader(leader, term);
            long newTerm = number(TERM, group.health(newLeader));
            // the user's client was on the stopped leader: its puts move to the new one (a put whose call timed out
            // there may fail; it is not counted)
            List<byte[]> after = new ArrayList<>();
            java.util.Random rnd = new java.util.Random(4444);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (after.size() < 10) {
                byte[] v = new byte[1 + rnd.nextInt(32 << 10)];
                rnd.nextBytes(v);
                try {
                    assertEquals(PutResult.Status.STORED, user.put("after/" + after.size(), v, ReplicateConfig.replicas(1)).status());
                    after.add(v);
                } catch (StoreException notYet) {
                    assertTrue(System.nanoTime() < deadline, "no put landed on the new leader within 15 s: " + notYet);
                }
            }

            // removed on the new leader: the deposed one's state still holds it
            int gone = before.size() - 1;
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (true) {
                try {
                    user.remove("before/" + gone);
                    break;
                } catch (StoreException notYet) {
                    if (notYet.error() == StoreError.OBJECT_NOT_FOUND) {
                        // an earlier try whose answer was lost removed it
                        break;
                    }
                    assertTrue(System.nanoTime() < deadline, "no removal landed on the new leader within 15 s: " + notYet);
                }
            }
            // reads sent while it is stopped: the first calls it serves when it wakes, maybe still believing it leads
            reads.send("after/0", after.get(0).length, "before/" + gone);
            // the other two stopped before it wakes: it hears of no later term and cannot catch up, so its state
            // stays the stale one until they are let go
            int third = 3 - leader - newLeader;
            group.signal(newLeader, "STOP");
            group.signal(third, "STOP");
            group.signal(leader, "CONT");
            reads.assertNoneStale("while it was stopped", Duration.ofSeconds(30));
            int deposed = leader;
            Poll.until("the deposed leader steps down (it hears from no majority)", Duration.ofSeconds(10),
                    Duration.ofMillis(20), () -> {
                        String h = group.health(deposed);
                        return h != null && !h.contains("\"role\":\"leader\"");
                    });
            // reads on the stream it took while it led, of a state it has not caught up from
            reads.send("after/0", after.get(0).length, "before/" + gone);
            reads.assertNoneStale("after it stepped down", Duration.ofSeconds(30));
            reads.close();
            group.signal(newLeader, "CONT");
            group.signal(third, "CONT");
            // from then on the deposed leader is asked to remove every object, until it says it follows the new
            // leader: each call is refused NOT_LEADER
            int refusals = 0;
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true) {
                try {
                    CountResponse r = stale.withDeadlineAfter(5, TimeUnit.SECONDS).removeByRegex(
                            RemoveByRegexRequest.newBuilder().setRegex("(before|after)/.*").setRequestSeq(refusals + 1).build());
                    assertEquals(StoreError.NOT_LEADER.code(), r.getStatus().getCode(),
                            "the deposed leader answered a removal other than NOT_LEADER: " + r);
                } catch (StatusRuntimeException e) {
                    assertEquals(io.grpc.Status.Code.FAILED_PRECONDITION, e.getStatus().getCode(), e.toString());
                    assertTrue(e.getStatus().getDescription().startsWith("NOT_LEADER"), e.toString());
                }
                refusals++;
                String h = group.health(leader);
                if (h != null && h.contains("\"role\":\"follower\"") && number(TERM, h) >= newTerm) {
                    break;
                }
                assertTrue(System.nanoTime() < deadline, "the deposed leader did not say it follows within 10 s: " + h);
            }
            assertTrue(refusals > 0);

            // nothing it was asked took effect: its state catches up with the new leader's, every object in it
            long objects = before.size() - 1 + after.size();
            assertEquals(objects, number(OBJECTS, group.health(newLeader)));
            Poll.until("the deposed leader's state catches up to " + objects + " objects", Duration.ofSeconds(10),
                    Duration.ofMillis(20), () -> {
                        String h = group.health(deposed);
                        return h != null && number(OBJECTS, h) == objects;
                    });
            DurableValues.assertReadBack(user, "before/", before.subList(0, gone));
            assertFalse(user.exists("before/" + gone), "before/" + gone + " was removed on the new leader");
            DurableValues.assertReadBack(user, "after/", after);
        } finally {
            if (pinned != null) {
                pinned.shutdownNow();
            }
            if (user != null) {
                user.close();
            }
            if (node != null) {
                node.close();
            }
            // SIGKILL reaches a stopped master too
            group.close();
            engines.forEach(TransferEngine::close);
        }
    }
}
