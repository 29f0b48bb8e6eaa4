package org.tent4j.store.master;

import static org.tent4j.store.master.DurableLog.ELECTION_MAX;
import static org.tent4j.store.master.DurableLog.ELECTION_MIN;
import static org.tent4j.store.master.DurableLog.LEASE_RATIO;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;

/** The Ratis settings a store master's {@link DurableLog} runs with (docs/STORE.md, "Durable mode", says why). */
final class RaftSettings {
    private RaftSettings() {
    }

    /** The log in {@code dataDir}/raft, as {@code settings} say; the caller adds the Raft server's port. */
    static RaftProperties of(Path dataDir, DurableLog.Settings settings) {
        RaftProperties props = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(props, List.of(dataDir.resolve("raft").toFile()));
        // acknowledged means on disk: the leader counts itself towards a commit only after its fsync
        RaftServerConfigKeys.Log.setUnsafeFlushEnabled(props, false);
        RaftServerConfigKeys.Log.setSegmentSizeMax(props, SizeInBytes.valueOf(settings.segmentBytes()));
        // the largest entry (a batch, or a RemoveKeys of many keys) must fit the write buffer
        RaftServerConfigKeys.Log.setWriteBufferSize(props, SizeInBytes.valueOf("16MB"));
        RaftServerConfigKeys.Log.setCorruptionPolicy(props, RaftServerConfigKeys.Log.CorruptionPolicy.EXCEPTION);
        // no entry recording each new commit index (Ratis's log metadata: a fifth of a busy master's entries, each
        // written and synced): a restarted master learns what is committed from its term's first entry, which it
        // applies, with everything before it, before it serves (notifyLeaderReady), and a follower from its leader
        RaftServerConfigKeys.Log.setLogMetadataEnabled(props, false);
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(props, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(props, settings.snapshotEvery());
        RaftServerConfigKeys.Snapshot.setCreationGap(props, 1);
        RaftServerConfigKeys.Snapshot.setTriggerWhenStopEnabled(props, settings.snapshotOnStop());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(props, 2);
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(props, true);
        RaftServerConfigKeys.Log.setPurgeGap(props, settings.purgeGap());
        // Ratis's 150-300 ms election timeouts let a starved leader (two cores shared with nodes and clients, a GC pause)
        // miss heartbeats: the survivors then deposed each other for 10 s and more. A dead leader is noticed after
        // ELECTION_MIN-ELECTION_MAX (failover-bench: p99 2.4 s at 0.5-1 s, 4.3 s at 1-2 s); the first election at start
        // keeps Ratis's short timeouts, so a master starts as fast
        RaftServerConfigKeys.Rpc.setTimeoutMin(props, ELECTION_MIN);
        RaftServerConfigKeys.Rpc.setTimeoutMax(props, ELECTION_MAX);
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMin(props, TimeDuration.valueOf(150, TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMax(props, TimeDuration.valueOf(300, TimeUnit.MILLISECONDS));
        // reads off the log (awaitReadable) are Ratis's linearizable reads: served while the leader lease holds
        // (LEASE_RATIO of ELECTION_MIN since a heartbeat a majority acknowledged was sent: no other master can have
        // been elected before that), else after a round of heartbeats a majority acknowledges
        RaftServerConfigKeys.Read.setOption(props, RaftServerConfigKeys.Read.Option.LINEARIZABLE);
        RaftServerConfigKeys.Read.setLeaderLeaseEnabled(props, true);
        RaftServerConfigKeys.Read.setLeaderLeaseTimeoutRatio(props, LEASE_RATIO);
        // a read sees what this master applied, not all it knows committed: every call is answered only once its entry
        // is applied here, so every acknowledged change is seen, and a read never waits for the applier to work
        // through entries nobody was answered for yet (concurrent with the read: either order is linearizable). A new
        // leader serves only once ready, its term's first entry applied, so it has applied all the last leader's
        RaftServerConfigKeys.Read.ReadIndex.setType(props, RaftServerConfigKeys.Read.ReadIndex.Type.APPLIED_INDEX);
        return props;
    }
}
