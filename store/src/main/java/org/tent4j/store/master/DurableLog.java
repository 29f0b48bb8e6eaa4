package org.tent4j.store.master;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientAsynchronousProtocol;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.ChecksumException;
import org.apache.ratis.protocol.exceptions.LeaderNotReadyException;
import org.apache.ratis.protocol.exceptions.NotLeaderException;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.TimeDuration;
import org.tent4j.store.StoreError;
import org.tent4j.store.StoreException;

/**
 * The master's command log on disk, ordered by Apache Ratis: a group of one when no peers are named (the same log, so
 * a restart loses nothing acknowledged), a Raft group otherwise. Commands are proposed as entries and answered once
 * committed and applied ({@link MasterStateMachine}); {@link #open} returns only when this master leads and has
 * applied everything its log held, so nothing is served from a state that is behind.
 */
public final class DurableLog implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DurableLog.class);
    /** The file that marks a directory as a store master's data dir, and which group and peer it belongs to. */
    public static final String MARKER = "tent4j-store-master.properties";
    private static final RaftGroupId GROUP = RaftGroupId.valueOf(
            UUID.nameUUIDFromBytes("tent4j-store-master".getBytes(StandardCharsets.UTF_8)));

    /**
     * Ratis settings the master chooses (docs/STORE.md, "Durable mode", says why): snapshot every
     * {@code snapshotEvery} applied entries, and whether one is taken when the master stops; log segments of at most
     * {@code segmentBytes} (a closed segment is what a snapshot lets Ratis delete), deleted once a snapshot is
     * {@code purgeGap} entries past the last purge.
     */
    public record Settings(long snapshotEvery, boolean snapshotOnStop, long startTimeoutMillis, long segmentBytes,
            int purgeGap) {
        public Settings(long snapshotEvery, boolean snapshotOnStop, long startTimeoutMillis) {
            this(snapshotEvery, snapshotOnStop, startTimeoutMillis, 32 << 20, 1024);
        }

        public static Settings defaults() {
            return new Settings(100_000, true, 60_000);
        }
    }

    /**
     * Where this master stands in its group: whether it leads (and may apply), the Raft term, and the leader's id and
     * store RPC address as far as it knows them (null when it knows none), and Ratis's log indexes: the last
     * committed (on a majority) as far as this master knows, and the last applied to its state (Ratis's own indexes,
     * configuration entries included: not the state's command count), and the first index its log still holds (past
     * 0 once a snapshot let Ratis purge what came before, or once this master installed the leader's snapshot).
     */
    public record Role(boolean leader, long term, String leaderId, String leaderRpc, long commitIndex, long appliedIndex,
            long startIndex) {
    }

    private final RaftServer server;
    /**
     * The group's member on this server, which proposals and reads go to directly: through {@link RaftServer} each
     * request is first handed to Ratis's client thread pool while the calling thread waits for it (a thread wake-up
     * more per call, about half of a small call's latency on two busy cores), and requests of one caller could
     * reach the log out of order. Directly, a request is in the log's queue when the call returns.
     */
    private final RaftClientAsynchronousProtocol member;
    private final MasterStateMachine machine;
    private final RaftPeerId self;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong calls = new AtomicLong();
    // random start: a restarted master never waits on a proposal id its log holds from before
    private final AtomicLong proposals = new AtomicLong(ThreadLocalRandom.current().nextLong());

    private final GroupCommit groupCommit;
    /** Whether other masters share this log (a group), not a master alone. */
    private final boolean group;
    /** Peer id to store RPC address, for naming the leader to clients. */
    private final java.util.Map<String, String> rpcOf;

    private DurableLog(RaftServer server, RaftClientAsynchronousProtocol member, MasterStateMachine machine,
                       RaftPeerId self, List<MasterPeer> peers) {
        this.server = server;
        this.member = member;
        this.machine = machine;
        this.self = self;
        this.group = peers.size() > 1;
        this.groupCommit = new GroupCommit(this::propose, machine.metrics,
                group ? GroupCommit.IN_FLIGHT_GROUP : GroupCommit.IN_FLIGHT_ALONE);
        java.util.Map<String, String> m = new java.util.HashMap<>();
        peers.stream().filter(p -> p.rpc() != null).forEach(p -> m.put(p.id(), p.rpc()));
        this.rpcOf = java.util.Map.copyOf(m);
    }

    /** How long followers wait for a leader's heartbeat before an election: the shortest and longest (random between). */
    static final TimeDuration ELECTION_MIN = TimeDuration.valueOf(500, TimeUnit.MILLISECONDS);
    static final TimeDuration ELECTION_MAX = TimeDuration.valueOf(1000, TimeUnit.MILLISECONDS);
    /**
     * The leader lease as a share of {@link #ELECTION_MIN} (Ratis's default): the margin is for the masters' clocks
     * running at different rates, not for their offsets (Ratis measures on each master's monotonic clock).
     */
    static final double LEASE_RATIO = 0.9;
    /**
     * The longest a read waits for Ratis to confirm this master leads. Ratis itself gives up sooner: a leader that
     * hears no majority for {@link #ELECTION_MAX} steps down and fails the reads waiting; this bound is the backstop.
     */
    static final long READ_CHECK_MILLIS = 5_000;

    /**
     * Opens (or creates) the log in {@code dataDir} and waits until this master may serve. {@code peers} empty: a
     * group of one on a free port. Refuses a directory that holds files but no {@link #MARKER}, or whose marker names
     * another peer or group, and a corrupt snapshot or log ({@link IOException} naming the file).
     */
    public static DurableLog open(MasterConfig config, Path dataDir, String selfId, List<MasterPeer> peers, Settings settings)
            throws IOException {
        return open(config, dataDir, selfId, peers, settings, InstantSource.system());
    }

    /** {@link #open}, with the wall clock the snapshot age is measured on ({@link LogMetrics}). */
    public static DurableLog open(MasterConfig config, Path dataDir, String selfId, List<MasterPeer> peers, Settings settings,
            InstantSource clock) throws IOException {
        List<RaftPeer> group = (peers.isEmpty() ? List.of(new MasterPeer(selfId, "127.0.0.1:0")) : peers).stream()
                .map(p -> RaftPeer.newBuilder().setId(p.id()).setAddress(p.address()).build()).toList();
        RaftPeer me = group.stream().filter(p -> p.getId().toString().equals(selfId)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("--id " + selfId + " is not among the peers " + group));
        boolean fresh = MasterDataDir.checkMarker(dataDir, selfId, GROUP.getUuid().toString());
        RaftProperties props = RaftSettings.of(dataDir, settings);
        GrpcConfigKeys.Server.setPort(props, MasterPeer.port(me.getAddress()));
        MasterStateMachine machine = new MasterStateMachine(config, new LogMetrics(clock));
        RaftServer server = RaftServer.newBuilder()
                .setServerId(me.getId())
                .setGroup(RaftGroup.valueOf(GROUP, group))
                .setStateMachine(machine)
                .setProperties(props)
                .setOption(fresh ? RaftStorage.StartupOption.FORMAT : RaftStorage.StartupOption.RECOVER)
                .build();
        // every leader, once ready, makes sure the group has a client-credential key (a no-op once one is applied)
        machine.onLeading(() -> {
            // the state, not this process, says whether the group has a key: a master that caught up from a snapshot
            // holds it there, and one proposed by an earlier leader is applied before this leader is ready
            if (machine.state().credentialKey() == null) {
                proposeKey(server, me.getId());
            }
        });
        try {
            server.start();
            machine.ready.get(settings.startTimeoutMillis(), TimeUnit.MILLISECONDS);
        } catch (IOException e) {
            server.close();
            throw e;
        } catch (RuntimeException e) {
            server.close();
            // Ratis builds the group on its own thread: surface the refusal (a corrupt snapshot, say) as it was
            for (Throwable c = e; c != null; c = c.getCause()) {
                if (c instanceof ChecksumException bad) {
                    // Ratis names neither the segment nor the directory
                    throw new IOException("the store master's log in " + dataDir.resolve("raft") + " is corrupt "
                            + MasterDataDir.segments(dataDir) + ": " + bad.getMessage() + "; refusing to serve", bad);
                }
                if (c instanceof IOException io) {
                    throw io;
                }
            }
            throw e;
        } catch (ExecutionException | TimeoutException e) {
            server.close();
            throw new IOException("store master " + selfId + " in " + dataDir + " did not become ready to serve within "
                    + settings.startTimeoutMillis() + " ms", e);
        } catch (InterruptedException e) {
            server.close();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting the store master's log in " + dataDir, e);
        }
        RaftClientAsynchronousProtocol member;
        try {
            member = server.getDivision(GROUP) instanceof RaftClientAsynchronousProtocol m ? m : null;
        } catch (IOException e) {
            server.close();
            throw e;
        }
        if (member == null) {
            server.close();
            throw new IllegalStateException("this Ratis version's group member takes no client requests directly ("
                    + RaftClientAsynchronousProtocol.class.getName() + "); the store master needs it to keep calls in order");
        }
        if (fresh && group.size() > 1) {
            CatchUpWatch.start(server, RaftGroup.valueOf(GROUP, group), me.getId());
        }
        return new DurableLog(server, member, machine, me.getId(), peers);
    }

    /**
     * Proposes a fresh client-credential key for the group when none is applied yet. The first key entry in the log
     * is the group's on every master (later ones are ignored), so credentials issued by one leader hold on the next.
     */
    private static void proposeKey(RaftServer server, RaftPeerId self) {
        try {
            server.submitClientRequestAsync(RaftClientRequest.newBuilder()
                    .setClientId(ClientId.randomId()).setServerId(self).setGroupId(GROUP).setCallId(0)
                    .setMessage(Message.valueOf(ByteString.copyFrom(MasterStateMachine.keyEntry())))
                    .setType(RaftClientRequest.writeRequestType()).build())
                    .whenComplete((reply, err) -> {
                        if (err != null || !reply.isSuccess()) {
                            // not the leader any more: the next leader proposes one when it is ready
                            LOG.warn("proposing the group's client-credential key failed: {}",
                                    err != null ? err.toString() : String.valueOf(reply.getException()));
                        }
                    });
        } catch (IOException e) {
            LOG.warn("proposing the group's client-credential key failed", e);
        }
    }

    /**
     * The group's client-credential key: completes once this master's state holds it, applied from the log's first key
     * entry or restored from a snapshot (its own at start, or the leader's it installed), on every master alike.
     */
    public CompletableFuture<byte[]> credentialKey() {
        return machine.credentialKey;
    }

    /** This master's role now (see {@link Role}); a closed log leads nothing and knows no leader. */
    public Role role() {
        try {
            var division = server.getDivision(GROUP);
            var info = division.getInfo();
            RaftPeerId leader = info.getLeaderId();
            String id = leader == null ? null : leader.toString();
            return new Role(info.isLeader(), info.getCurrentTerm(), id, id == null ? null : rpcOf.get(id),
                    division.getRaftLog().getLastCommittedIndex(), info.getLastAppliedIndex(),
                    division.getRaftLog().getStartIndex());
        } catch (IOException closed) {
            return new Role(false, 0, null, null, -1, -1, -1);
        }
    }

    /** This master's current Raft term (0 once closed): the one every answer carries. */
    public long term() {
        try {
            return server.getDivision(GROUP).getInfo().getCurrentTerm();
        } catch (IOException closed) {
            return 0;
        }
    }

    /** This master's id in its group. */
    public String id() {
        return self.toString();
    }

    public MasterState state() {
        return machine.state();
    }

    /**
     * Runs {@code r} each time this master becomes a leader ready to serve (every entry of earlier terms applied),
     * on Ratis's thread, before the master proposes anything of its own in that term.
     */
    public void onLeading(Runnable r) {
        machine.onLeading(r);
    }

    /** Completes the first time this master is a leader ready to serve (at once for a group of one). */
    public CompletableFuture<Void> leaderReady() {
        return machine.leaderReady;
    }

    /** Commit latency, leader changes and the latest snapshot, for {@code /metrics} and the status page. */
    public LogMetrics metrics() {
        return machine.metrics;
    }

    /** Entries of commands applied since this log was opened: a batch committed as one entry counts once. */
    public long entriesApplied() {
        return machine.entriesApplied.get();
    }

    /** Whether other masters share this log: each of them writes and applies every entry too. */
    public boolean inGroup() {
        return group;
    }

    /** Whether this master leads its group now (a group of one always does once open). */
    public boolean leads() {
        return role().leader();
    }

    /**
     * Proposes {@code commands} at {@code now}, in one entry with other calls' when entries are in flight
     * ({@link GroupCommit}); completes with each command's result (or the exception it was refused with) once the
     * entry is committed and applied, or fails with {@code UNAVAILABLE_IN_CURRENT_STATUS} when it could not be (not
     * the leader, shutting down).
     */
    public CompletableFuture<List<Object>> submit(long now, List<Command<?>> commands) {
        return groupCommit.submit(now, commands);
    }

    /** Proposes {@code commands} as one entry at {@code now}, as {@link #submit} completes. */
    private CompletableFuture<List<Object>> propose(long now, List<Command<?>> commands) {
        long proposal = proposals.incrementAndGet();
        CompletableFuture<List<Object>> results = new CompletableFuture<>();
        machine.await(proposal, commands, results);
        RaftClientRequest request = RaftClientRequest.newBuilder()
                .setClientId(clientId)
                .setServerId(self)
                .setGroupId(GROUP)
                .setCallId(calls.incrementAndGet())
                // the encoded bytes are this entry's alone: wrapped, not copied
                .setMessage(Message.valueOf(UnsafeByteOperations.unsafeWrap(
                        CommandCodec.encode(new CommandCodec.Entry(proposal, now, commands)))))
                .setType(RaftClientRequest.writeRequestType())
                .build();
        try {
            member.submitClientRequestAsync(request).whenComplete((reply, err) -> {
                Throwable why = err != null ? err : reply.isSuccess() ? null : reply.getException();
                if (why != null) {
                    machine.forget(proposal);
                    results.completeExceptionally(unavailable(why));
                }
            });
        } catch (IOException e) {
            machine.forget(proposal);
            results.completeExceptionally(unavailable(e));
        }
        return results;
    }

    /** {@link #submit} of one command, waited for: its result, or the {@link StoreException} it was refused with. */
    @SuppressWarnings("unchecked")
    public <R> R apply(long now, Command<R> command) {
        Object r;
        try {
            r = submit(now, List.of(command)).join().getFirst();
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException re ? re : e;
        }
        if (r instanceof RuntimeException refused) {
            throw refused;
        }
        return (R) r;
    }

    /**
     * Returns once this master may answer a read from its own state, with no log entry: Ratis's linearizable read
     * (a read-only request, {@code LINEARIZABLE}) found that it leads and that its state has applied everything
     * committed when the read began. While the leader lease holds that is a clock comparison on this thread's
     * hand-off into Ratis, no network round trip; past it (a leader that was stopped, starved or cut off) it takes a
     * round of heartbeats a majority acknowledges. Refused {@code NOT_LEADER} when Ratis says this master does not
     * lead, or could not confirm it within {@link #READ_CHECK_MILLIS}: never answered from a state another leader
     * may have moved past.
     */
    public void awaitReadable() {
        Throwable why;
        try {
            var reply = member.submitClientRequestAsync(readCheck()).get(READ_CHECK_MILLIS, TimeUnit.MILLISECONDS);
            if (reply.isSuccess()) {
                return;
            }
            why = reply.getException();
        } catch (IOException | ExecutionException e) {
            why = e;
        } catch (TimeoutException e) {
            why = new IOException("no confirmation within " + READ_CHECK_MILLIS + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            why = e;
        }
        throw unconfirmed(why);
    }

    /**
     * {@link #awaitReadable}'s check without waiting on the calling thread: completes true once Ratis confirmed it
     * (at once while the leader lease holds and the state has applied everything committed; else after the applier
     * caught up or a round of heartbeats, on Ratis's thread), false when it was refused or not confirmed within
     * {@link #READ_CHECK_MILLIS}. For a thread that must not block (an event loop).
     */
    public CompletableFuture<Boolean> readable() {
        try {
            // the timeout completes the answer, not Ratis's own reply future
            return member.submitClientRequestAsync(readCheck())
                    .handle((reply, err) -> err == null && reply.isSuccess())
                    .completeOnTimeout(false, READ_CHECK_MILLIS, TimeUnit.MILLISECONDS);
        } catch (IOException e) {
            return CompletableFuture.completedFuture(false);
        }
    }

    private RaftClientRequest readCheck() {
        return RaftClientRequest.newBuilder()
                .setClientId(clientId)
                .setServerId(self)
                .setGroupId(GROUP)
                .setCallId(calls.incrementAndGet())
                .setMessage(Message.EMPTY)
                .setType(RaftClientRequest.readRequestType())
                .build();
    }

    /** A read Ratis did not let through, as the client should see it: always {@code NOT_LEADER}, naming the leader if known. */
    private org.tent4j.store.NotLeaderException unconfirmed(Throwable why) {
        if (unavailable(why) instanceof org.tent4j.store.NotLeaderException notLeader) {
            return notLeader;
        }
        Role role = role();
        boolean other = role.leaderId() != null && !role.leaderId().equals(self.toString());
        return new org.tent4j.store.NotLeaderException("master " + self + " could not confirm it still leads its group"
                + " (term " + role.term() + ") and answers no read from its own state: " + why
                + (other ? "; the leader is " + role.leaderId() : ""), other ? role.leaderRpc() : null);
    }

    /**
     * Why an entry was not committed, as the client should see it: {@code NOT_LEADER} naming the leader when Ratis
     * says this master does not lead (or does not lead yet), else {@code UNAVAILABLE_IN_CURRENT_STATUS}.
     */
    private StoreException unavailable(Throwable why) {
        Throwable cause = why instanceof CompletionException && why.getCause() != null ? why.getCause() : why;
        for (Throwable c = cause; c != null; c = c.getCause()) {
            if (c instanceof NotLeaderException n) {
                RaftPeer leader = n.getSuggestedLeader();
                String id = leader == null ? null : leader.getId().toString();
                return new org.tent4j.store.NotLeaderException("master " + self + " does not lead its group"
                        + (id == null ? " and knows no leader" : "; the leader is " + id), id == null ? null : rpcOf.get(id));
            }
            if (c instanceof LeaderNotReadyException) {
                return new org.tent4j.store.NotLeaderException("master " + self + " was just elected and has not "
                        + "applied its log yet; try again", rpcOf.get(self.toString()));
            }
        }
        return new StoreException(StoreError.UNAVAILABLE_IN_CURRENT_STATUS,
                "the master's log did not commit the call: " + cause);
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
