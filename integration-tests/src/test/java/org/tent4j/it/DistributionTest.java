package org.tent4j.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution as a user gets it: {@code cli/target/tent4j-<version>.tar.gz} unpacked into an empty directory
 * outside the repository, its {@code bin/} scripts run with no class path but their own {@code lib/}: the doctor, a
 * loopback bench that checks every byte, and a store master, node and bench that verifies every value it reads.
 */
class DistributionTest {
    private static final Duration WAIT = Duration.ofSeconds(90);

    @TempDir
    static Path unpacked;

    static Path home;

    private final List<Process> started = new ArrayList<>();

    @BeforeAll
    static void unpack() throws Exception {
        Path target = Path.of(System.getProperty("tent4j.root", ".."), "cli", "target").toAbsolutePath().normalize();
        Path tarball;
        try (Stream<Path> files = Files.list(target)) {
            tarball = files.filter(p -> p.getFileName().toString().matches("tent4j-.*\\.tar\\.gz")).findFirst()
                    .orElseThrow(() -> new AssertionError("no tent4j-<version>.tar.gz in " + target
                            + ": package the cli module before integration-tests"));
        }
        Process tar = new ProcessBuilder("tar", "-xzf", tarball.toString(), "-C", unpacked.toString())
                .redirectErrorStream(true).start();
        String out = new String(tar.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, tar.waitFor(), "tar: " + out);
        try (Stream<Path> dirs = Files.list(unpacked)) {
            home = dirs.findFirst().orElseThrow();
        }
        assertTrue(home.getFileName().toString().startsWith("tent4j-"), home.toString());
        try (Stream<Path> lib = Files.list(home.resolve("lib"))) {
            List<String> jars = lib.map(p -> p.getFileName().toString()).toList();
            assertTrue(jars.stream().anyMatch(n -> n.startsWith("tent4j-cli-")), "lib/ lacks the command line: " + jars);
            assertTrue(jars.stream().noneMatch(n -> n.startsWith("junit-") || n.startsWith("te-testkit-")
                    || n.startsWith("transport-faulty-")), "test tools in lib/: " + jars);
        }
    }

    @AfterEach
    void stop() throws InterruptedException {
        for (Process p : started.reversed()) {
            p.destroy();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(20, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void confHoldsEveryKeyOfTheEngineAndTheShippedPlugins() throws Exception {
        String conf = Files.readString(home.resolve("conf").resolve("tent4j.properties"));
        for (String key : List.of("#transfer.timeout=30s", "#metadata.uri=p2p", "#transports.tcp.lanes=",
                "#transports.shm.", "#transports.mooncake-tcp.", "#metadata.etcd.")) {
            assertTrue(conf.contains(key), key + " missing from conf/tent4j.properties:\n" + conf);
        }
        assertTrue(!conf.contains("transports.faulty."), "the test-only fault injector is documented in conf/");
    }

    /**
     * LICENSE and NOTICE at the top, and licenses/THIRD-PARTY.txt naming every third-party jar in lib/ (its
     * {@code groupId:artifactId:version}) with the license its own POM declares. tent4j's own jars carry the
     * distribution's version and LICENSE itself.
     */
    @Test
    void everyBundledLibraryIsListedWithItsLicense() throws Exception {
        assertTrue(Files.readString(home.resolve("LICENSE")).contains("Apache License"), "LICENSE");
        assertTrue(Files.readString(home.resolve("NOTICE")).contains("licenses/THIRD-PARTY.txt"), "NOTICE");
        String version = home.getFileName().toString().substring("tent4j-".length());
        // "     (License) Name (group:artifact:version - url)": the jar it covers is artifact-version[-classifier].jar
        Pattern line = Pattern.compile("\\s*\\((.+)\\) .* \\(([^:() ]+):([^:() ]+):([^:() ]+) - [^)]*\\)");
        List<String> covered = new ArrayList<>();
        for (String l : Files.readAllLines(home.resolve("licenses").resolve("THIRD-PARTY.txt"))) {
            Matcher m = line.matcher(l);
            if (m.matches() && !m.group(1).contains("Unknown license")) {
                covered.add(m.group(3) + "-" + m.group(4));
            }
        }
        List<String> unlisted = new ArrayList<>();
        try (Stream<Path> lib = Files.list(home.resolve("lib"))) {
            for (String jar : lib.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".jar")).sorted().toList()) {
                boolean own = jar.endsWith("-" + version + ".jar");
                boolean listed = covered.stream().anyMatch(c -> jar.equals(c + ".jar") || jar.startsWith(c + "-linux-"));
                if (!own && !listed) {
                    unlisted.add(jar);
                }
            }
        }
        assertTrue(covered.size() > 50, "licenses/THIRD-PARTY.txt lists " + covered.size() + " libraries");
        assertEquals(List.of(), unlisted, "lib/ jars without a license line in licenses/THIRD-PARTY.txt");
    }

    /** The build's training run (scripts/aot-cache.sh) shipped a cache, and the scripts start the JVM with it. */
    @Test
    void theAheadOfTimeCacheIsShippedAndOpened() throws Exception {
        assertTrue(Files.size(home.resolve("lib").resolve("tent4j.aot")) > 0, "lib/tent4j.aot");
        Run r = runToEnd(Map.of("TENT4J_JAVA_OPTS", "-Xlog:aot=info:stderr"), "tent4j", "-V");
        assertEquals(0, r.status, r.output);
        assertTrue(r.output.contains("Opened AOT cache") && !r.output.contains("[error]"), r.output);
        Run off = runToEnd(Map.of("TENT4J_AOT", "off", "TENT4J_JAVA_OPTS", "-Xlog:aot=info:stderr"), "tent4j", "-V");
        assertEquals(0, off.status, off.output);
        assertTrue(!off.output.contains("Opened AOT cache"), off.output);
    }

    /**
     * {@code tent4j bench} starts with a cache of its own (lib/tent4j-bench.aot), and picocli, whose class files the
     * build re-emitted as Java 8 ones (scripts/OldClassFiles.java), comes out of the cache rather than its jar.
     */
    @Test
    void theBenchHasItsOwnCacheAndPicocliIsInIt() throws Exception {
        assertTrue(Files.size(home.resolve("lib").resolve("tent4j-bench.aot")) > 0, "lib/tent4j-bench.aot");
        Run bench = runToEnd(Map.of("TENT4J_JAVA_OPTS", "-Xlog:aot=info:stderr"), "tent4j", "bench", "--help");
        assertEquals(0, bench.status, bench.output);
        assertTrue(bench.output.contains("tent4j-bench.aot"), bench.output);
        Run loads = runToEnd(Map.of("TENT4J_JAVA_OPTS", "-Xlog:class+load=info:stderr"), "tent4j", "-V");
        assertEquals(0, loads.status, loads.output);
        String picocli = loads.output.lines().filter(l -> l.contains(" picocli.CommandLine ")).findFirst().orElse("");
        assertTrue(picocli.contains("source: shared objects file"), "picocli.CommandLine was loaded: " + picocli);
    }

    @Test
    void doctorListsTheTransports() throws Exception {
        Run r = runToEnd("tent4j", "doctor", "--no-options");
        assertEquals(0, r.status, r.output);
        assertTrue(r.output.contains("tcp") && r.output.contains("shm"), r.output);
    }

    @Test
    void loopbackBenchMovesEveryByteIntact() throws Exception {
        Run r = runToEnd("te-bench", "--mode=loopback", "--protocol=tcp", "--block-size=64k", "--batch-size=8",
                "--threads=1", "--buffer-size=16m", "--duration=1", "--warmup=0", "--check_consistency");
        assertEquals(0, r.status, r.output);
        assertTrue(r.output.contains("errors      0"), r.output);
    }

    @Test
    void storeMasterNodeAndBenchFromTheDistribution() throws Exception {
        Lines master = start("tent4j", "store", "master", "--host", "127.0.0.1", "--port", "0", "--admin-port", "-1");
        String address = "127.0.0.1:" + master.await("LISTENING ").split(" ")[1];
        Lines node = start("store-node", "--master", address, "--segment-size", "32m", "--control-host", "127.0.0.1");
        node.await("READY ");
        String common = "--master " + address + " --control-host 127.0.0.1 --threads 2 --count 64 --size 16k --warmup 0s"
                + " --prefix dist";
        Run put = runToEnd("store-bench", (common + " --mode put").split(" "));
        assertEquals(0, put.status, put.output);
        Run get = runToEnd("tent4j", ("store bench " + common + " --mode get --verify").split(" "));
        assertEquals(0, get.status, get.output);
        assertTrue(get.output.contains("get: 128 ops") && get.output.contains("0 errors, 0 mismatches"), get.output);
    }

    private record Run(int status, String output) {
    }

    private ProcessBuilder command(Map<String, String> extraEnv, String script, List<String> args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(home.resolve("bin").resolve(script).toString());
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(unpacked.toFile()).redirectErrorStream(true);
        Map<String, String> env = pb.environment();
        env.remove("CLASSPATH");
        env.put("JAVA_HOME", System.getProperty("java.home"));
        env.put("TENT4J_HEAP", "512m");
        env.remove("TENT4J_AOT");
        env.remove("TENT4J_JAVA_OPTS");
        env.putAll(extraEnv);
        return pb;
    }

    private Run runToEnd(String script, String... args) throws Exception {
        return runToEnd(Map.of(), script, args);
    }

    private Run runToEnd(Map<String, String> env, String script, String... args) throws Exception {
        Process p = command(env, script, List.of(args)).start();
        started.add(p);
        // the output is read to its end on this thread: the process cannot block on a full pipe
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS), script + " " + String.join(" ", args) + " did not end:\n" + out);
        return new Run(p.exitValue(), out);
    }

    /** A long-running command whose output lines are read as they come. */
    private Lines start(String script, String... args) throws IOException {
        Process p = command(Map.of(), script, List.of(args)).start();
        started.add(p);
        return new Lines(p);
    }

    private static final class Lines {
        private final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        private final StringBuilder seen = new StringBuilder();

        Lines(Process p) {
            Thread.ofVirtual().start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String line; (line = r.readLine()) != null; ) {
                        lines.add(line);
                    }
                } catch (IOException ended) {
                    // the process is gone; await reports what it printed
                }
            });
        }

        String await(String prefix) throws InterruptedException {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (System.nanoTime() < deadline) {
                String line = lines.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (line == null) {
                    break;
                }
                seen.append(line).append('\n');
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            throw new AssertionError("no line starting '" + prefix + "' within " + WAIT + "; output:\n" + seen);
        }
    }
}
