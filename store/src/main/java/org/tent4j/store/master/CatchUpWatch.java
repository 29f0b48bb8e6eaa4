package org.tent4j.store.master;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gets a master that started on an empty data dir into a group that already has a log. The leader that tracked this
 * master before it lost its dir never sends below the last entry it acknowledged (Ratis's
 * {@code getNextIndexForInconsistency}, RATIS-2523), so the empty log would wait for ever for entries it cannot take;
 * a leader elected afterwards tracks it from nothing and sends the snapshot and the tail. So: when this master's log
 * stays empty for {@link #STUCK_MILLIS} after it first learned of a leader, it asks the last leader it knew to step
 * down (Ratis's {@code transferLeadership} to no one; {@link Stuck}). A group being formed is not asked: its leader's
 * first entry reaches every member at once, well within that time.
 */
final class CatchUpWatch {
    private static final Logger LOG = LoggerFactory.getLogger(CatchUpWatch.class);
    static final long STUCK_MILLIS = 3_000;
    private static final long LOOK_MILLIS = 200;
    private static final int MAX_ASKS = 5;

    private CatchUpWatch() {
    }

    /** Starts the watch for {@code server}'s division of {@code group} on a daemon thread. */
    static void start(RaftServer server, RaftGroup group, RaftPeerId self) {
        Thread.ofPlatform().daemon().name("store-master-catch-up").start(() -> watch(server, group, self));
    }

    private static void watch(RaftServer server, RaftGroup group, RaftPeerId self) {
        Stuck stuck = new Stuck();
        int asked = 0;
        try (RaftClient client = RaftClient.newBuilder().setRaftGroup(group).setProperties(new RaftProperties())
                .setClientId(org.apache.ratis.protocol.ClientId.randomId()).build()) {
            while (asked < MAX_ASKS) {
                // Ratis offers no event for "a leader's entries are refused": look at its state a few times a second
                Thread.sleep(LOOK_MILLIS);
                var division = server.getDivision(group.getGroupId());
                var info = division.getInfo();
                if (info.getLastAppliedIndex() >= 0 || division.getRaftLog().getLastEntryTermIndex() != null
                        || info.isLeader()) {
                    return; // caught up, or catching up
                }
                RaftPeerId ask = stuck.look(System.nanoTime(), info.getLeaderId());
                if (ask != null) {
                    asked++;
                    LOG.info("store master {} started on an empty data dir and {} sent it nothing for {} ms: asking {} to "
                            + "step down, so that a new leader sends this master the group's snapshot", self, ask,
                            STUCK_MILLIS, ask);
                    RaftClientReply reply = client.admin().transferLeadership(null, ask, 10_000);
                    if (!reply.isSuccess()) {
                        LOG.warn("store master {}: {} did not step down: {}", self, ask, reply.getException());
                    }
                }
            }
            LOG.warn("store master {} has an empty log after asking the leader to step down {} times; restart the "
                    + "leader (docs/STORE.md, \"Snapshots\")", self, MAX_ASKS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            // the master closed (getDivision fails), or the client could not reach the group: nothing left to do
            LOG.debug("store master {}: catch-up watch ended: {}", self, e.toString());
        }
    }

    /**
     * When to ask, from what an empty log sees a few times a second: the leader it knows, or none. A leader whose
     * entries an empty log refuses backs off its heartbeats past this master's election timeout, so the master goes
     * candidate (knowing no leader) between them; time stuck counts across those gaps, from the first leader seen,
     * and the ask goes to the last leader known. Before any leader is known (a group being formed) nothing counts.
     */
    static final class Stuck {
        private long since = -1;
        /** The last leader this master knew of, null before the first. */
        private RaftPeerId lastLeader;

        /** A look at {@code now} (nanos), knowing {@code leader} or none: the leader to ask to step down, or null. */
        RaftPeerId look(long now, RaftPeerId leader) {
            if (leader != null) {
                lastLeader = leader;
            }
            if (lastLeader == null) {
                return null;
            }
            if (since < 0) {
                since = now;
                return null;
            }
            if (now - since < TimeUnit.MILLISECONDS.toNanos(STUCK_MILLIS)) {
                return null;
            }
            since = -1;
            return lastLeader;
        }
    }
}
