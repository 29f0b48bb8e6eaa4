package org.tent4j.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.StoreClock;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.rpc.MasterServer;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tent4j aot-train}: the training run of the JDK's ahead-of-time cache (JEPs 483, 514, 515). One JVM walks
 * the paths a user's first seconds take: the doctor, loopback transfers over tcp and shm at 4 KiB and 1 MiB, and a
 * store master with a bench that puts and gets through it. Run under {@code -XX:AOTCacheOutput} (the build does,
 * scripts/aot-cache.sh), its classes and method profiles start every later command warm.
 *
 * <p>{@code --only bench} trains the loopback transfers alone, for the cache {@code tent4j bench} starts with
 * ({@code lib/tent4j-bench.aot}). JDK 25 loads and links every class of a cache when the JVM starts, so the whole
 * cache (60 MB, the store's and Ratis's classes too) cost a bench 0.15 s more to start than one of its own (about 43 MB).
 */
@Command(name = "aot-train", hidden = true, mixinStandardHelpOptions = true,
        description = "The training run for the JDK's ahead-of-time cache (see scripts/aot-cache.sh).")
public final class AotTrainCommand implements Callable<Integer> {
    /** The commands with a cache of their own. */
    enum Only { bench }

    @Option(names = "--only", paramLabel = "COMMAND",
            description = "Train one command's paths only: ${COMPLETION-CANDIDATES} (for lib/tent4j-<COMMAND>.aot). "
                    + "Default: every command.")
    Only only;

    /** The runs that failed (their arguments and exit code), named at the end: a build log shows only its tail. */
    private final List<String> failed = new ArrayList<>();

    @Override
    public Integer call() throws IOException {
        if (only == null) {
            run("doctor", "--no-options");
        }
        for (String protocol : new String[]{"tcp", "shm"}) {
            for (String block : new String[]{"4k", "1m"}) {
                run("bench", "--mode=loopback", "--protocol=" + protocol, "--block-size=" + block,
                        "--batch-size=32", "--threads=2", "--buffer-size=64m", "--warmup=0", "--duration=1",
                        "--check-consistency");
            }
        }
        if (only == null) {
            try (MasterServer master = MasterServer.start(MasterConfig.defaults(), StoreClock.system(), "127.0.0.1", 0, 100);
                 TransferEngine nodeEngine = TransferEngine.create(EngineConfig.builder()
                         .set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
                 StoreClient node = StoreClient.builder(nodeEngine, "127.0.0.1:" + master.port()).connect()) {
                // a node that lends the store its memory for the whole run, as `tent4j store node` does
                node.contribute(256L << 20);
                String address = "127.0.0.1:" + master.port();
                // 4 s of puts first: a method's profile enters the cache only once it ran long enough to be profiled
                // and compiled, and 100 puts left the put path's hot methods to be profiled again by every client
                // (1 MiB puts over a client's first 3 s: median 2,030 MiB/s trained on 100 puts, 2,350 on 4 s of them,
                // 6 interleaved rounds: docs/perf-notes/warm-start.md)
                for (String size : new String[]{"4k", "1m"}) {
                    storeBench(address, "put", size, "--duration", "4s", "--prefix", "train-long-" + size);
                }
                for (String size : new String[]{"4k", "1m"}) {
                    for (String mode : new String[]{"put", "get"}) {
                        storeBench(address, mode, size, "--count", "100", "--prefix", "train-" + size, "--verify");
                    }
                }
            }
        }
        for (String f : failed) {
            System.err.println("aot-train: failed: " + f);
        }
        return failed.isEmpty() ? 0 : 1;
    }

    /** {@code tent4j store bench} of {@code mode} and {@code size}: 2 threads, 4 KiB values in batches of 32. */
    private void storeBench(String address, String mode, String size, String... more) {
        List<String> args = new ArrayList<>(List.of("store", "bench", "--master", address,
                "--control-host", "127.0.0.1", "--mode", mode, "--size", size, "--threads", "2",
                "--batch", size.equals("4k") ? "32" : "1", "--warmup", "0s"));
        args.addAll(List.of(more));
        run(args.toArray(String[]::new));
    }

    /**
     * Runs one command as bin/tent4j would, with the picocli model of that command alone, and once more if it failed:
     * the build trains beside other modules' tests, and a transfer that timed out on two busy cores says nothing about
     * the code the cache is for. A command that fails twice is named, and fails the training.
     */
    private void run(String... args) {
        String command = "tent4j " + String.join(" ", args);
        int exit = Tent4jCommand.commandLine(args).execute(args);
        if (exit != 0) {
            System.err.println("aot-train: " + command + " exited " + exit + "; running it again");
            exit = Tent4jCommand.commandLine(args).execute(args);
        }
        if (exit != 0) {
            failed.add(command + " (exit " + exit + ", twice)");
        }
    }
}
