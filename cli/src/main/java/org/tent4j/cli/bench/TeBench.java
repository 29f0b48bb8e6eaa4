package org.tent4j.cli.bench;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.stream.Collectors;

import org.tent4j.cli.options.DurationConverter;
import org.tent4j.cli.options.SizeConverter;
import org.tent4j.api.BufferInfo;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.Location;
import org.tent4j.api.Opcode;
import org.tent4j.api.Permission;
import org.tent4j.api.RegisteredMemory;
import org.tent4j.api.SegmentHandle;
import org.tent4j.api.SegmentInfo;
import org.tent4j.api.TransferEngine;
import org.tent4j.api.TransferException;
import org.tent4j.api.TransportInfo;
import org.tent4j.cli.options.ConciseUsageErrors;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * te-bench: throughput and latency of one transport between two engines, after Mooncake's
 * {@code transfer_engine_bench} (same flag names). A target allocates a buffer and waits; an initiator reads or writes
 * blocks of it from several threads; loopback runs both in one process.
 *
 * <p>Exit status: 0 on success; 1 if a run aborted, or had errors under {@code --check_consistency}; 2 for bad flags;
 * 3 if setting up failed (engine, transport, segment, memory).
 */
@Command(name = "bench", aliases = "te-bench", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
        description = "Measures throughput and latency of a tent4j transport between two engines. Run a target "
                + "(it prints --segment_id=...), then an initiator with that --segment_id; or run both in one process "
                + "with --mode=loopback.",
        footer = {"", "Exit status: 0 ok, 1 run aborted or errors under --check_consistency, 2 bad flags, 3 setup failed."})
public final class TeBench implements Callable<Integer> {
    static final int EXIT_RUN_FAILED = 1;
    static final int EXIT_SETUP_FAILED = 3;

    /** Which side(s) of the benchmark this process runs. */
    public enum Mode { TARGET, INITIATOR, LOOPBACK }

    /** Read pulls target bytes into local memory; write pushes local bytes to the target. */
    public enum Operation {
        READ(Opcode.READ), WRITE(Opcode.WRITE);

        final Opcode opcode;

        Operation(Opcode opcode) {
            this.opcode = opcode;
        }
    }

    @Spec
    CommandSpec spec;

    @Option(names = "--mode", defaultValue = "loopback", paramLabel = "target|initiator|loopback",
            description = "target: allocate a buffer and wait; initiator: drive requests at --segment_id; "
                    + "loopback: both in one process (default: ${DEFAULT-VALUE}).")
    Mode mode;

    @Option(names = "--operation", defaultValue = "read", paramLabel = "read|write",
            description = "read (target -> initiator) or write (initiator -> target). Default: ${DEFAULT-VALUE}.")
    Operation operation;

    @Option(names = "--protocol", defaultValue = "tcp", paramLabel = "ID",
            description = "Transport id every request requires (tcp, shm, rdma, efa, nvlink...), and in loopback and "
                    + "initiator mode the only one the engine runs, unless a config file, --set or the environment names "
                    + "transports.enabled. Default: ${DEFAULT-VALUE}.")
    String protocol;

    @Option(names = {"--block-size", "--block_size"}, defaultValue = "65536", converter = SizeConverter.class,
            paramLabel = "SIZE", description = "Bytes per request: 4096, 64k, 1m... Default: ${DEFAULT-VALUE}.")
    long blockSize;

    @Option(names = {"--batch-size", "--batch_size"}, defaultValue = "32", paramLabel = "N",
            description = "Requests per batch. Default: ${DEFAULT-VALUE} (Mooncake uses 128; 32 suits a 2-core box).")
    int batchSize;

    @Option(names = "--threads", defaultValue = "2", paramLabel = "N",
            description = "Initiator threads, each with its own part of the buffer. Default: ${DEFAULT-VALUE}.")
    int threads;

    @Option(names = "--duration", defaultValue = "10s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Measured time (10s, 1.5s, 500ms; a plain number is seconds). Default: ${DEFAULT-VALUE}.")
    Duration duration;

    // 1 s left C2 compiling into the measurement on a loaded 2-core box (a profile 4 s into a run found 47% of its
    // samples in libjvm); 3 s trades that against run time; pass more on a busy machine
    @Option(names = "--warmup", defaultValue = "3s", converter = DurationConverter.class, paramLabel = "DURATION",
            description = "Unmeasured time before the measurement (JIT, connections). Default: ${DEFAULT-VALUE}.")
    Duration warmup;

    @Option(names = {"--buffer-size", "--buffer_size"}, defaultValue = "256m", converter = SizeConverter.class,
            paramLabel = "SIZE", description = "Buffer per side (Mooncake: 1g). Default: ${DEFAULT-VALUE}.")
    long bufferSize;

    @Option(names = {"--metadata-server", "--metadata_server"}, paramLabel = "URI",
            description = "Metadata store: p2p (embedded peer-to-peer, the engine default), memory://name, "
                    + "etcd://host:2379, redis://..., http://... Given to the engine as metadata.uri.")
    String metadataServer;

    @Option(names = {"--local-server-name", "--local_server_name"}, paramLabel = "NAME",
            description = "This engine's segment name (segment.name); default: chosen by the engine (host:port in p2p).")
    String localServerName;

    @Option(names = {"--segment-id", "--segment_id"}, paramLabel = "NAME",
            description = "The target's segment name, as its --segment_id=... line printed it (initiator only).")
    String segmentId;

    @Option(names = {"--check-consistency", "--check_consistency"},
            description = "Verify every byte: reads are checked against the target's pattern, writes are read back. "
                    + "Errors then make the exit status 1.")
    boolean checkConsistency;

    @Option(names = "--json", description = "End with one JSON line: gbps (10^9 B/s), ops_per_sec, p50_us, p99_us, "
            + "p999_us, bytes, errors, protocol, operation, block_size, batch_size, threads, duration_s.")
    boolean json;

    @Option(names = {"--metrics-port", "--metrics_port"}, paramLabel = "PORT",
            description = "Serve Prometheus metrics on PORT (metrics.port; 0 picks one). In loopback the initiator "
                    + "engine serves them.")
    Integer metricsPort;

    @Option(names = "--config", paramLabel = "FILE", description = "Engine config file (.json or .properties).")
    Path configFile;

    @Option(names = "--set", paramLabel = "KEY=VALUE",
            description = "Any engine config key, repeatable: --set slice.size=1m --set transports.tcp.lanes=2. "
                    + "The dedicated flags above win over --set for the same key.")
    Map<String, String> settings;

    /** Installed by {@link org.tent4j.cli.Tent4jCommand#main} only: tests run targets in-process and stop them with {@link #requestStop}. */
    private boolean handleSignals;
    private final CountDownLatch stopRequested = new CountDownLatch(1);

    /**
     * Makes a target turn SIGINT/SIGTERM into an orderly stop with exit status 0. For a process's main command only:
     * the handlers are process-wide.
     */
    public TeBench handlingTerminationSignals() {
        handleSignals = true;
        return this;
    }

    /** A command line for {@code bench}, parsing enums case-insensitively. */
    public static CommandLine commandLine(TeBench bench) {
        return new CommandLine(bench).setCaseInsensitiveEnumValuesAllowed(true)
                .setParameterExceptionHandler(new ConciseUsageErrors());
    }

    /** Makes a running target return (as SIGTERM does). */
    public void requestStop() {
        stopRequested.countDown();
    }

    @Override
    public Integer call() throws Exception {
        validate();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        try {
            return switch (mode) {
                case TARGET -> runTarget(out, err);
                case INITIATOR -> runInitiator(out, err);
                case LOOPBACK -> runLoopback(out, err);
            };
        } catch (SetupFailure e) {
            err.println("te-bench: " + e.getMessage());
            err.flush();
            return EXIT_SETUP_FAILED;
        } catch (TransferException e) {
            err.println("te-bench: setup failed: " + e);
            if (e.getCause() != null) {
                err.println("  caused by " + e.getCause());
            }
            err.flush();
            return EXIT_SETUP_FAILED;
        }
    }

    private void validate() {
        List<String> problems = new java.util.ArrayList<>();
        if (blockSize <= 0) {
            problems.add("--block_size must be > 0");
        }
        if (batchSize <= 0) {
            problems.add("--batch_size must be > 0");
        }
        if (threads <= 0) {
            problems.add("--threads must be > 0");
        }
        if (duration.isZero()) {
            problems.add("--duration must be > 0");
        }
        if (bufferSize <= 0) {
            problems.add("--buffer_size must be > 0");
        }
        if (mode == Mode.INITIATOR && (segmentId == null || segmentId.isBlank())) {
            problems.add("--segment_id is required for --mode=initiator (the target prints it as --segment_id=...)");
        }
        if (mode != Mode.INITIATOR && segmentId != null) {
            problems.add("--segment_id is only for --mode=initiator");
        }
        if (problems.isEmpty() && mode != Mode.TARGET
                && InitiatorWorkload.rangePerThread(bufferSize, threads, blockSize, batchSize) == 0) {
            problems.add("--buffer_size too small: "
                    + InitiatorWorkload.tooSmall(bufferSize, threads, blockSize, batchSize));
        }
        if (!problems.isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(), String.join("; ", problems));
        }
    }

    private int runTarget(PrintWriter out, PrintWriter err) throws SetupFailure, InterruptedException {
        // a target runs every transport available: initiators may ask for another --protocol than its own
        TransferEngine engine = createEngine(localServerName, true, false);
        Thread closeOnExit = Thread.ofPlatform().name("te-bench-close").unstarted(engine::close);
        Runtime.getRuntime().addShutdownHook(closeOnExit);
        try (engine) {
            requireTransport(engine);
            RegisteredMemory buffer = allocate(engine, bufferSize);
            // filling also faults every page in, so the first measured requests do not pay for it
            DataPattern.fill(buffer.segment(), 0, DataPattern.TARGET_SEED);
            out.printf(Locale.ROOT, "te-bench target: segment '%s', buffer at 0x%x, %d bytes (%s, %s), transports %s%n",
                    engine.segmentName(), buffer.address(), buffer.length(), buffer.location(), buffer.permission(),
                    enabledTransports(engine));
            out.println("--segment_id=" + engine.segmentName());
            out.flush();
            if (handleSignals) {
                TerminationSignals.install(this::requestStop);
            }
            err.println("te-bench target: serving until SIGINT or SIGTERM");
            err.flush();
            stopRequested.await();
            err.println("te-bench target: stopping");
            err.flush();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(closeOnExit);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or has run; it closes the engine again, which is harmless
            }
        }
        return 0;
    }

    private int runInitiator(PrintWriter out, PrintWriter err) throws SetupFailure, InterruptedException {
        try (TransferEngine engine = createEngine(localServerName, true, true)) {
            requireTransport(engine);
            SegmentHandle segment;
            try {
                segment = engine.openSegment(segmentId);
            } catch (TransferException e) {
                throw new SetupFailure("cannot open segment '" + segmentId + "': " + e.getMessage(), e);
            }
            try {
                return measure(engine, segment, true, out, err);
            } finally {
                engine.closeSegment(segment);
            }
        }
    }

    private int runLoopback(PrintWriter out, PrintWriter err) throws SetupFailure, InterruptedException {
        try (TransferEngine targetEngine = createEngine(localServerName, false, true);
             TransferEngine initiatorEngine = createEngine(localServerName == null ? null : localServerName + "-initiator", true, true)) {
            requireTransport(targetEngine);
            requireTransport(initiatorEngine);
            RegisteredMemory buffer = allocate(targetEngine, bufferSize);
            // only a check reads the pattern here (no other initiator comes); either fill faults every page in
            if (checkConsistency) {
                DataPattern.fill(buffer.segment(), 0, DataPattern.TARGET_SEED);
            } else {
                buffer.segment().fill((byte) 0);
            }
            SegmentHandle segment;
            try {
                segment = initiatorEngine.openSegment(targetEngine.segmentName());
            } catch (TransferException e) {
                throw new SetupFailure("loopback initiator cannot open the target's segment '"
                        + targetEngine.segmentName() + "': " + e.getMessage(), e);
            }
            try {
                return measure(initiatorEngine, segment, false, out, err);
            } finally {
                initiatorEngine.closeSegment(segment);
            }
        }
    }

    private int measure(TransferEngine engine, SegmentHandle segment, boolean seedTarget, PrintWriter out,
                        PrintWriter err) throws SetupFailure, InterruptedException {
        SegmentInfo info = engine.segmentInfo(segment);
        if (!info.transports().contains(protocol)) {
            throw new SetupFailure("segment '" + info.name() + "' runs transports " + info.transports()
                    + "; --protocol=" + protocol + " is not among them");
        }
        if (info.buffers().isEmpty()) {
            throw new SetupFailure("segment '" + info.name() + "' publishes no buffers (is it a te-bench target?)");
        }
        BufferInfo target = info.buffers().get(0);
        if (!target.permission().allowsRemote(operation.opcode)
                || (checkConsistency && !target.permission().allowsRemote(Opcode.WRITE))) {
            throw new SetupFailure("segment '" + info.name() + "' buffer at 0x" + Long.toHexString(target.address())
                    + " is " + target.permission() + "; --operation=" + operation.name().toLowerCase(Locale.ROOT)
                    + (checkConsistency ? " with --check_consistency" : "") + " needs more");
        }
        long working = Math.min(bufferSize, target.length());
        if (InitiatorWorkload.rangePerThread(working, threads, blockSize, batchSize) == 0) {
            throw new SetupFailure("segment '" + info.name() + "' buffer is too small: "
                    + InitiatorWorkload.tooSmall(working, threads, blockSize, batchSize));
        }
        RegisteredMemory local = allocate(engine, working);
        try {
            // fault the pages in now, or the first pass over the buffer measures the kernel's page faults
            local.segment().fill((byte) 0);
            out.printf(Locale.ROOT, "te-bench initiator: %s over %s, %d B blocks, batch %d, %d thread(s), "
                            + "segment '%s' (transports %s) buffer 0x%x (%d of %d bytes used), %.1f s + %.1f s warm-up%s%n",
                    operation.name().toLowerCase(Locale.ROOT), protocol, blockSize, batchSize, threads, info.name(),
                    info.transports(), target.address(), working, target.length(), duration.toMillis() / 1e3,
                    warmup.toMillis() / 1e3,
                    checkConsistency ? ", checking every byte" : "");
            out.flush();
            InitiatorWorkload workload = new InitiatorWorkload(engine, segment, target.address(), local.segment(),
                    new InitiatorWorkload.Plan(operation.opcode, protocol, blockSize, batchSize, threads,
                            warmup, duration, checkConsistency, seedTarget),
                    err);
            BenchResult result = workload.run();
            out.println(result.summary());
            if (json) {
                out.println(result.toJson());
            }
            out.flush();
            if (workload.aborted() || (checkConsistency && result.errors() > 0)) {
                return EXIT_RUN_FAILED;
            }
            return 0;
        } finally {
            engine.unregister(local);
        }
    }

    /**
     * The engine of one side. {@code onlyProtocol}: it runs the transport under test and no other, as Mooncake's
     * transfer_engine_bench installs only its --protocol's, so it probes no device library it will not use (the
     * probes, and the native calls the other transports link, were a third of a short run's time to its first
     * transfer). A fallback: a config file (--config, TENT4J_CONFIG), --set and the environment still decide.
     */
    private TransferEngine createEngine(String segmentName, boolean withMetrics, boolean onlyProtocol) throws SetupFailure {
        EngineConfig.Builder b = EngineConfig.builder();
        if (onlyProtocol) {
            b.fallback(EngineConfig.TRANSPORTS_ENABLED, protocol);
        }
        if (configFile != null) {
            b.file(configFile);
        }
        if (settings != null) {
            b.setAll(settings);
        }
        if (metadataServer != null) {
            // Mooncake spells the embedded mode P2PHANDSHAKE
            b.set(EngineConfig.METADATA_URI, metadataServer.equalsIgnoreCase("P2PHANDSHAKE") ? "p2p" : metadataServer);
        }
        if (segmentName != null) {
            b.set(EngineConfig.SEGMENT_NAME, segmentName);
        }
        if (withMetrics && metricsPort != null) {
            b.set(EngineConfig.METRICS_PORT, metricsPort);
        }
        try {
            return TransferEngine.create(b.build());
        } catch (TransferException e) {
            throw new SetupFailure("cannot create the engine" + (onlyProtocol ? " for --protocol=" + protocol : "")
                    + ": " + e.getMessage(), e);
        }
    }

    private void requireTransport(TransferEngine engine) throws SetupFailure {
        if (engine.segmentInfo(engine.localSegment()).transports().contains(protocol)) {
            // running: asking engine.transports() would probe every transport this engine does not run
            return;
        }
        List<TransportInfo> all = engine.transports();
        TransportInfo t = all.stream().filter(i -> i.id().equals(protocol)).findFirst().orElse(null);
        if (t == null) {
            throw new SetupFailure("--protocol=" + protocol + ": no such transport on the class path (found: "
                    + all.stream().map(TransportInfo::id).collect(Collectors.joining(", ")) + ")");
        }
        if (!t.available()) {
            throw new SetupFailure("--protocol=" + protocol + " is unavailable here: " + t.cause());
        }
        if (!t.enabled()) {
            throw new SetupFailure("--protocol=" + protocol + " is available but not enabled in this engine "
                    + "(enabled: " + enabledTransports(engine) + "; see --set transports.enabled=...)");
        }
    }

    private static List<String> enabledTransports(TransferEngine engine) {
        return engine.transports().stream().filter(TransportInfo::enabled).map(TransportInfo::id).toList();
    }

    private static RegisteredMemory allocate(TransferEngine engine, long size) throws SetupFailure {
        try {
            return engine.allocate(size, Location.CPU, Permission.READ_WRITE);
        } catch (TransferException | OutOfMemoryError e) {
            throw new SetupFailure("cannot allocate " + size + " bytes of registered memory (--buffer_size): "
                    + e.getMessage(), e);
        }
    }

    /** Setting up failed in a way the user can act on; the message says what and why. */
    static final class SetupFailure extends Exception {
        SetupFailure(String message) {
            super(message);
        }

        SetupFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
