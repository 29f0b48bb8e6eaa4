package org.tent4j.store.master;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;

/**
 * The master's state behind Ratis: each committed entry is decoded into its commands and handed to
 * {@link MasterState#applyAll} in log order, on Ratis's applier thread; snapshots are {@link MasterSnapshot} bytes in
 * Ratis's single-file snapshot storage (with its MD5 file). The master that proposed an entry waits on its proposal
 * id and gets the commands' results from here, so a call is answered only once its entry is committed and applied.
 */
final class MasterStateMachine extends BaseStateMachine {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(MasterStateMachine.class);
    private final MasterConfig config;
    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    /**
     * Replaced when Ratis initializes us (before anything is served) and when it installs a leader's snapshot (while
     * serving: readers take it from here each time, see {@link StoreMaster#state}).
     */
    private volatile MasterState state;
    /** A proposal this master made, waited for: its commands, and where their results go. */
    private record Proposed(List<Command<?>> commands, CompletableFuture<List<Object>> results) {
    }

    private final ConcurrentHashMap<Long, Proposed> waiting = new ConcurrentHashMap<>();
    /** Completed once this server leads and has applied every entry before its term's first (all it ever acknowledged). */
    final CompletableFuture<Void> ready = new CompletableFuture<>();
    /** Entries of commands applied since start (Ratis's own entries, configuration and metadata, not counted). */
    final java.util.concurrent.atomic.AtomicLong entriesApplied = new java.util.concurrent.atomic.AtomicLong();
    /** Completed the first time this server is a ready leader. */
    final CompletableFuture<Void> leaderReady = new CompletableFuture<>();

    /** Marks a key entry ("T4CK"), which is not a command entry ({@link CommandCodec}'s magic is "T4LE"). */
    private static final int KEY_MAGIC = 0x5434_434B;

    /**
     * The group's client-credential key, completed once the state holds one (see {@link DurableLog#credentialKey});
     * never replaced: every master's state adopts the log's first key entry, and a snapshot carries it.
     */
    final CompletableFuture<byte[]> credentialKey = new CompletableFuture<>();
    /** Told each time this master becomes a ready leader, before it proposes anything of its own. */
    private final List<Runnable> leading = new java.util.concurrent.CopyOnWriteArrayList<>();
    final LogMetrics metrics;

    MasterStateMachine(MasterConfig config, LogMetrics metrics) {
        this.config = config;
        this.metrics = metrics;
    }

    void onLeading(Runnable r) {
        leading.add(r);
    }

    /** A key entry holding a fresh random key. */
    static byte[] keyEntry() {
        byte[] k = new byte[MasterState.CREDENTIAL_KEY_BYTES];
        new java.security.SecureRandom().nextBytes(k);
        return ByteBuffer.allocate(4 + k.length).putInt(KEY_MAGIC).put(k).array();
    }

    /**
     * Completes {@link #credentialKey} from the state once it holds a key. A state restored from a snapshot holding
     * another key than the one this master serves with cannot be its group's: refused rather than served.
     */
    private void keyOf(MasterState s) throws IOException {
        byte[] k = s.credentialKey();
        if (k == null) {
            return;
        }
        if (credentialKey.isDone() && !java.util.Arrays.equals(credentialKey.join(), k)) {
            throw new IOException("the store master's state holds another client-credential key than the one this "
                    + "master issued credentials with; refusing to serve");
        }
        credentialKey.complete(k);
    }

    MasterState state() {
        return state;
    }

    /**
     * Waits for the entry of {@code proposal}, which carries {@code commands}: when it is applied here, they are
     * applied as they are (their bytes are what every other master decodes) and {@code results} completes.
     */
    void await(long proposal, List<Command<?>> commands, CompletableFuture<List<Object>> results) {
        waiting.put(proposal, new Proposed(commands, results));
    }

    void forget(long proposal) {
        waiting.remove(proposal);
    }

    @Override
    public SimpleStateMachineStorage getStateMachineStorage() {
        return storage;
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        // RUNNING once loaded, so Ratis can pause it (and reload it) to install a leader's snapshot
        getLifeCycle().startAndTransition(() -> {
            super.initialize(server, groupId, raftStorage);
            storage.init(raftStorage);
            load(storage.getLatestSnapshot());
        }, IOException.class);
    }

    /**
     * Ratis calls this after it installed a snapshot the leader sent (this master was too far behind: the entries it
     * lacked were purged from the leader's log), with the applier paused. The restored state takes the running one's
     * place and its listeners (the evictor's wake-up, a journal), and Ratis goes on with the entries after it.
     */
    @Override
    public void reinitialize() throws IOException {
        MasterState before = state;
        load(storage.loadLatestSnapshot());
        if (before != null && state != before) {
            state.takeListenersOf(before);
        }
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
        LOG.info("store master state reloaded from snapshot {} (installed from the leader)", getLastAppliedTermIndex());
    }

    /**
     * Ratis pauses the state machine before it installs the leader's snapshot, and reloads it only from
     * {@code PAUSED}: without this (the base class does nothing) the install fails and this master's Raft server
     * shuts down.
     */
    @Override
    public void pause() {
        getLifeCycle().transition(LifeCycle.State.PAUSING);
        getLifeCycle().transition(LifeCycle.State.PAUSED);
    }

    /** Restores the latest snapshot, refusing one whose bytes do not match its MD5 or do not read as a state. */
    private void load(SingleFileSnapshotInfo snapshot) throws IOException {
        if (snapshot == null) {
            state = new MasterState(config);
            return;
        }
        File file = snapshot.getFile().getPath().toFile();
        if (!file.exists()) {
            throw new IOException("store master snapshot " + file + " is missing");
        }
        var stored = MD5FileUtil.readStoredMd5ForFile(file);
        var computed = MD5FileUtil.computeMd5ForFile(file);
        if (!stored.equals(computed)) {
            throw new IOException("store master snapshot " + file + " is corrupt: its MD5 is " + computed
                    + ", its .md5 file says " + stored + "; refusing to serve from it");
        }
        MasterState restored;
        try {
            restored = MasterState.restore(config, Files.readAllBytes(file.toPath()));
        } catch (IllegalArgumentException e) {
            throw new IOException("store master snapshot " + file + " refused: " + e.getMessage(), e);
        }
        try {
            keyOf(restored);
        } catch (IOException e) {
            throw new IOException("store master snapshot " + file + " refused: " + e.getMessage(), e);
        }
        state = restored;
        setLastAppliedTermIndex(snapshot.getTermIndex());
        metrics.snapshotAt(snapshot.getIndex(), Files.getLastModifiedTime(file.toPath()).toMillis());
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        var logData = entry.getStateMachineLogEntry().getLogData();
        ByteBuffer head = logData.asReadOnlyByteBuffer();
        if (head.remaining() >= 4 && head.getInt(head.position()) == KEY_MAGIC) {
            byte[] data = logData.toByteArray();
            MasterState s = state;
            try {
                // the first key entry is the group's on every master; a later one (a leader that proposed before it
                // applied the first) changes nothing
                s.adoptCredentialKey(java.util.Arrays.copyOfRange(data, 4, data.length));
                keyOf(s);
            } catch (IllegalArgumentException | IOException bad) {
                return CompletableFuture.failedFuture(new IllegalStateException("store master log entry "
                        + entry.getIndex() + " (the group's client-credential key) cannot be applied: "
                        + bad.getMessage(), bad));
            }
            updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
            return CompletableFuture.completedFuture(Message.EMPTY);
        }
        CommandCodec.Entry e;
        Proposed mine = null;
        try {
            long proposal = CommandCodec.proposal(head);
            mine = waiting.remove(proposal);
            // this master's own entry: its commands as proposed, not decoded again from their bytes
            e = mine != null ? new CommandCodec.Entry(proposal, CommandCodec.now(head), mine.commands())
                    : CommandCodec.decode(logData.toByteArray());
        } catch (IllegalArgumentException bad) {
            // applying around it would leave this state different from every other replica's: stop here
            return CompletableFuture.failedFuture(new IllegalStateException("store master log entry " + entry.getIndex()
                    + " (term " + entry.getTerm() + ") cannot be read: " + bad.getMessage(), bad));
        }
        // at the proposer's clock (held back to the last entry's time); a refused command counts as applied, as in
        // memory: what it changed stays, the caller sees the refusal
        List<Object> results = state.applyAll(e.now(), e.commands());
        updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
        entriesApplied.incrementAndGet();
        if (mine != null) {
            mine.results().complete(results);
        }
        return CompletableFuture.completedFuture(Message.EMPTY);
    }

    /**
     * A follower serves as soon as it knows a leader: its writes are refused (not the leader) and its reads off the
     * stream may lag the leader's, until clients follow the leader (a later step of issue 22).
     */
    @Override
    public void notifyLeaderChanged(RaftGroupMemberId member, RaftPeerId leader) {
        metrics.leaderIs(leader == null ? null : leader.toString());
        if (leader != null && !leader.equals(member.getPeerId())) {
            ready.complete(null);
        }
    }

    /** Ratis marks a leader ready once it has applied its own term's first entry, so every earlier one before it. */
    @Override
    public void notifyLeaderReady() {
        leading.forEach(Runnable::run);
        leaderReady.complete(null);
        ready.complete(null);
    }

    /**
     * Runs on Ratis's applier thread between entries, so the state and the last applied term and index agree. Written
     * to a temporary file and moved into place, so a crash while writing leaves the previous snapshot the latest.
     */
    @Override
    public long takeSnapshot() throws IOException {
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() < 0) {
            return -1;
        }
        byte[] bytes = state.snapshot();
        File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        Path tmp = file.toPath().resolveSibling(file.getName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            // on disk before Ratis purges the log entries it replaces
            ch.force(true);
        }
        Files.move(tmp, file.toPath(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        var md5 = MD5FileUtil.computeAndSaveMd5ForFile(file);
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file.toPath(), md5), last));
        metrics.snapshotAt(last.getIndex(), metrics.nowMillis());
        return last.getIndex();
    }
}
