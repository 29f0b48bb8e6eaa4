package org.tent4j.cli.store;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

import org.tent4j.api.EngineConfig;
import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.store.PrintableId;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.admin.AdminServer;
import org.tent4j.store.master.DurableLog;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.MasterPeer;
import org.tent4j.store.master.Placement;
import org.tent4j.store.master.StoreMaster;
import org.tent4j.store.rpc.ClientCredentials;
import org.tent4j.store.rpc.MasterServer;

import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code tent4j store master}: runs a store master until killed. Prints {@code LISTENING <rpc port> <admin port>}
 * once serving, and {@code EXPIRED <client id>} whenever a client's segments are dropped for silence (scripts and
 * tests wait on these lines).
 */
@Command(name = "master", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = {"Runs the store's metadata master until killed.",
                "Prints 'LISTENING <rpc port> <admin port>' once serving and 'EXPIRED <client id>' when a client's "
                        + "segments are dropped for silence."})
public final class MasterCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Option(names = "--host", defaultValue = "127.0.0.1", paramLabel = "ADDRESS",
            description = "Address the RPC and admin ports listen on. Default: ${DEFAULT-VALUE} (this host only); "
                    + "another address without --token-file serves everyone, and says so in a WARN line at start.")
    String host;

    @Mixin
    SecurityOptions security;

    @Option(names = {"--admin-token-file", "--admin_token_file"}, paramLabel = "FILE",
            description = "File holding the admin token that forced bulk removal (RemoveAll, RemoveByRegex and "
                    + "BatchRemove with force) must prove. Without it a master with a token refuses them to everyone; "
                    + "a master with neither token serves them to everyone.")
    Path adminTokenFile;

    @Option(names = {"--mount-proof", "--mount_proof"}, arity = "0..1", paramLabel = "true|false",
            description = "Mount a segment only after reading back, through an engine of the master's own (on --host, "
                    + "with the token and TLS above, started at the first mount), the nonce the client wrote at the "
                    + "segment's base: nobody can point the store at memory they cannot write. Default: true when the "
                    + "master authenticates callers (a token or TLS, from the options or the environment), else false; "
                    + "--mount-proof=false turns it off.")
    Boolean mountProof;

    @Option(names = "--port", defaultValue = "50051", paramLabel = "PORT",
            description = "RPC port; 0 picks a free one. Default: ${DEFAULT-VALUE}.")
    int port;

    @Option(names = {"--max-connections", "--max_connections"}, defaultValue = "1024", paramLabel = "N",
            description = "Connections the RPC port keeps open; those beyond are closed at accept. With a token or TLS "
                    + "only connections that authenticated count, and up to 64 others wait in slots of their own "
                    + "(the oldest closed first), so silent connections cannot lock clients out. Default: ${DEFAULT-VALUE}.")
    int maxConnections;

    @Option(names = {"--inbound-bytes-budget", "--inbound_bytes_budget"}, defaultValue = "256m",
            converter = SizeConverter.class, paramLabel = "SIZE",
            description = "Bytes of partly received RPC messages the master holds, all connections together; a message "
                    + "that would go beyond is refused RESOURCE_EXHAUSTED (each call's first 16 KiB is free, so small "
                    + "calls go on). Keep it above the largest message clients send (up to 64 MiB) with room: each "
                    + "piece received costs 256 bytes besides its bytes. Default: ${DEFAULT-VALUE}.")
    long inboundBytesBudget;

    @Option(names = {"--admin-port", "--admin_port"}, defaultValue = "9003", paramLabel = "PORT",
            description = "Admin HTTP port (/, /health, /metrics, /segments, /clients, /keys); -1: none. "
                    + "Default: ${DEFAULT-VALUE}.")
    int adminPort;

    @Option(names = {"--lease-ttl", "--lease_ttl"}, converter = DurationConverter.class, paramLabel = "DURATION",
            description = "How long a read lease holds an object's replicas. Default: 10s.")
    Duration leaseTtl;

    @Option(names = {"--client-ttl", "--client_ttl"}, converter = DurationConverter.class, paramLabel = "DURATION",
            description = "A client silent this long has its segments dropped. Default: 10s.")
    Duration clientTtl;

    @Option(names = "--placement", defaultValue = "random", paramLabel = "random|free_ratio_first",
            description = "How replicas are placed on segments. Default: ${DEFAULT-VALUE}.")
    String placement;

    @Option(names = {"--high-watermark", "--high_watermark"}, defaultValue = "0.90", paramLabel = "RATIO",
            description = "Use ratio above which eviction starts. Default: ${DEFAULT-VALUE}.")
    double highWatermark;

    @Option(names = {"--eviction-ratio", "--eviction_ratio"}, defaultValue = "0.05", paramLabel = "RATIO",
            description = "Share of the store each eviction round frees. Default: ${DEFAULT-VALUE}.")
    double evictionRatio;

    @Option(names = {"--offload-on-evict", "--offload_on_evict"}, defaultValue = "true", arity = "1",
            paramLabel = "true|false", description = "With a disk segment mounted, eviction offloads victims to their "
                    + "node's disk instead of dropping them. Default: ${DEFAULT-VALUE}.")
    boolean offloadOnEvict;

    @Option(names = {"--offload-timeout", "--offload_timeout"}, defaultValue = "30s", converter = DurationConverter.class,
            paramLabel = "DURATION", description = "An offload not reported done by then fails (its disk range comes "
                    + "back after as long again). Default: ${DEFAULT-VALUE}.")
    Duration offloadTimeout;

    @Option(names = {"--promote-after-hits", "--promote_after_hits"}, defaultValue = "0", paramLabel = "N",
            description = "Copy an object whose only replica is on disk back into memory after N reads (0: never). "
                    + "Default: ${DEFAULT-VALUE}.")
    int promoteAfterHits;

    @Option(names = {"--promote-window", "--promote_window"}, defaultValue = "0s", converter = DurationConverter.class,
            paramLabel = "DURATION", description = "Count towards --promote-after-hits only reads within this long of "
                    + "the first one counted; an older count starts again (0: no window, reads count since the object "
                    + "last left memory; at most a day, 1440m). Default: ${DEFAULT-VALUE}.")
    Duration promoteWindow;

    @Option(names = {"--write-through", "--write_through"}, defaultValue = "false", arity = "0..1",
            paramLabel = "true|false", description = "With a disk segment mounted, copy every put to its node's disk "
                    + "as soon as it ends (the object keeps its memory replica), unless the put says otherwise "
                    + "(ReplicateConfig.withWriteThrough). Default: ${DEFAULT-VALUE}.")
    boolean writeThrough;

    @Option(names = {"--repairs-in-flight", "--repairs_in_flight"}, defaultValue = "64", paramLabel = "N",
            description = "Most under-replicated objects being copied back to their asked replica count at once "
                    + "(0: no repair). Default: ${DEFAULT-VALUE}.")
    int repairsInFlight;

    @Option(names = {"--repairs-per-node", "--repairs_per_node"}, defaultValue = "8", paramLabel = "N",
            description = "Most of those copying to one node at once. Default: ${DEFAULT-VALUE}.")
    int repairsPerNode;

    @Option(names = "--tick", defaultValue = "100ms", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Housekeeping period (lease, put and client expiry). Default: ${DEFAULT-VALUE}.")
    Duration tick;

    @Option(names = {"--data-dir", "--data_dir"}, paramLabel = "DIR",
            description = "Keep the master's command log and snapshots here (Apache Ratis) and answer a mutating call "
                    + "only once its entry is on disk; a restart on the same dir recovers every acknowledged object. "
                    + "Default: none (state in memory only, lost when the master stops).")
    Path dataDir;

    @Option(names = "--id", defaultValue = "m1", paramLabel = "ID",
            description = "This master's id in its group (with --data-dir). Default: ${DEFAULT-VALUE}.")
    String id;

    @Option(names = "--peers", paramLabel = "ID=HOST:RAFT_PORT[/RPC_PORT],...",
            description = "Every master of the group, this one included, with its Raft port and, after a slash, its "
                    + "store RPC port (--port), which followers name to clients as the leader's (with --data-dir). "
                    + "Default: none (a group of one).")
    String peers;

    /** The master configuration these options describe. */
    MasterConfig config() {
        MasterConfig d = MasterConfig.defaults();
        Placement p;
        try {
            p = Placement.valueOf(placement.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--placement must be random or free_ratio_first: " + placement);
        }
        return new MasterConfig(leaseTtl == null ? d.leaseTtl() : leaseTtl, d.defaultSoftPinTtl(), d.maxSoftPinTtl(),
                highWatermark, evictionRatio, clientTtl == null ? d.clientTtl() : clientTtl, d.putDiscardTimeout(),
                d.putReleaseTimeout(), p, d.maxKeyBytes(), d.maxReplicas(), d.shards(), offloadOnEvict, offloadTimeout,
                promoteAfterHits, repairsInFlight, repairsPerNode, writeThrough, promoteWindow);
    }

    /**
     * Whether mounts must be proved: as asked, else whenever callers authenticate, since a member could otherwise point
     * the store at another member's memory (an open master's callers are anyone anyway).
     */
    boolean mountProof(StoreSecurity secured) {
        return mountProof != null ? mountProof : secured.authenticates() || secured.tls();
    }

    @Override
    public Integer call() throws IOException, InterruptedException {
        MasterConfig config;
        try {
            config = config();
        } catch (IllegalArgumentException e) {
            spec.commandLine().getErr().println("tent4j store master: " + e.getMessage());
            return 2;
        }
        if (dataDir == null && peers != null) {
            spec.commandLine().getErr().println("tent4j store master: --peers needs --data-dir");
            return 2;
        }
        StoreMaster master;
        if (dataDir == null) {
            master = new StoreMaster(config, StoreClock.system());
        } else {
            try {
                List<MasterPeer> group = peers == null ? List.of() : MasterPeer.parse(peers);
                master = new StoreMaster(DurableLog.open(config, dataDir, id, group, DurableLog.Settings.defaults()),
                        StoreClock.system());
            } catch (IllegalArgumentException | IOException e) {
                // a corrupt or foreign data dir: refuse to serve rather than serve a wrong state
                spec.commandLine().getErr().println("tent4j store master: " + e.getMessage());
                return 2;
            }
        }
        StoreSecurity secured;
        ClientCredentials credentials;
        try {
            secured = security.security(System.getenv());
            if (adminTokenFile != null) {
                secured = secured.withAdminToken(StoreSecurity.readToken(adminTokenFile));
            }
            credentials = ClientCredentials.of(master);
        } catch (IllegalArgumentException e) {
            master.close();
            spec.commandLine().getErr().println("tent4j store master: " + e.getMessage());
            return 2;
        }
        if (maxConnections < 1) {
            master.close();
            spec.commandLine().getErr().println("tent4j store master: --max-connections must be at least 1: " + maxConnections);
            return 2;
        }
        if (inboundBytesBudget < 1) {
            master.close();
            spec.commandLine().getErr().println("tent4j store master: --inbound-bytes-budget must be at least 1 byte: "
                    + inboundBytesBudget);
            return 2;
        }
        ProofEngine proofEngine = null;
        if (mountProof(secured)) {
            EngineConfig.Builder cfg = EngineConfig.builder().set(EngineConfig.CONTROL_HOST, host);
            security.applyTo(cfg);
            proofEngine = new ProofEngine(cfg.build());
        }
        MasterServer server = MasterServer.start(master, host, port, tick.toMillis(), r -> {
            for (String id : r.clientsExpired()) {
                // ids are validated at mount; escaped anyway, as scripts read this output line by line
                System.out.println("EXPIRED " + PrintableId.forLog(id));
            }
        }, secured, credentials, proofEngine, new MasterServer.Limits(maxConnections,
                MasterServer.Limits.DEFAULT.unprovenConnections(), MasterServer.Limits.DEFAULT.callsPerConnection(),
                inboundBytesBudget));
        ProofEngine engine = proofEngine;
        AdminServer admin = adminPort < 0 ? null : AdminServer.start(server, host, adminPort);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (admin != null) {
                admin.close();
            }
            server.close();
            if (engine != null) {
                engine.close();
            }
        }, "store-master-shutdown"));
        System.out.println("LISTENING " + server.port() + " " + (admin == null ? -1 : admin.port()));
        System.out.flush();
        server.awaitTermination();
        return 0;
    }
}
