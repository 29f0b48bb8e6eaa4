package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.tent4j.cli.Tent4jCommand;
import org.tent4j.testkit.ChildJvm;

/**
 * {@code store master --token-file}, {@code store node --token-file} and {@code store bench --token-file} end to end
 * (master and node as their own processes, the bench in this JVM): with the token the bench puts and reads back every
 * value verified (the node's mount proved through the master's own engine, under the token: a master with a token
 * proves mounts by default); without it, or with a wrong one, the bench is refused naming what was wrong and never the token.
 */
class StoreTokenCommandTest {
    @TempDir
    Path dir;
    private final List<ChildJvm> children = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (ChildJvm c : children.reversed()) {
            c.terminate();
        }
    }

    private record Result(int rc, String out, String err) {
        long field(String name) {
            Matcher m = Pattern.compile("\"" + name + "\":([0-9]+)").matcher(out);
            assertTrue(m.find(), name + " in " + out + " / " + err);
            return Long.parseLong(m.group(1));
        }
    }

    private static Result bench(String address, String... args) {
        List<String> all = new ArrayList<>(List.of("--master", address, "--control-host", "127.0.0.1", "--json",
                "--threads", "1", "--count", "24", "--size", "2000", "--warmup", "0s"));
        all.addAll(List.of(args));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = StoreBench.run(all.toArray(String[]::new), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private ChildJvm child(String... args) throws Exception {
        ChildJvm c = ChildJvm.start(Tent4jCommand.class, args);
        children.add(c);
        return c;
    }

    @Test
    void masterNodeAndBenchShareATokenFileAndStrangersAreRefused() throws Exception {
        Path token = dir.resolve("token");
        Files.writeString(token, "store-cluster-token\n");
        ChildJvm master = child("store", "master", "--port", "0", "--admin-port", "-1", "--token-file", token.toString());
        String address = "127.0.0.1:" + master.awaitLine("LISTENING ", ChildJvm.DEFAULT_TIMEOUT).split(" ")[1];
        ChildJvm node = child("store", "node", "--master", address, "--control-host", "127.0.0.1", "--segment-size", "16m",
                "--token-file", token.toString());
        assertTrue(node.awaitLine("READY ", ChildJvm.DEFAULT_TIMEOUT).startsWith("READY "));

        Result put = bench(address, "--mode", "put", "--prefix", "tok", "--token-file", token.toString());
        assertEquals(0, put.rc, put.err);
        assertEquals(24, put.field("ops"));
        Result get = bench(address, "--mode", "get", "--prefix", "tok", "--verify", "--token-file", token.toString());
        assertEquals(0, get.rc, get.err);
        assertEquals(24, get.field("ops"));
        assertEquals(0, get.field("mismatches"));

        Result stranger = bench(address, "--mode", "put", "--prefix", "stranger");
        assertEquals(1, stranger.rc, stranger.out);
        assertTrue(stranger.err.contains("requires a token"), stranger.err);
        Path wrong = dir.resolve("wrong");
        Files.writeString(wrong, "guessed");
        Result guessed = bench(address, "--mode", "get", "--prefix", "tok", "--token-file", wrong.toString());
        assertEquals(1, guessed.rc, guessed.out);
        assertTrue(guessed.err.contains("not this store master's"), guessed.err);
        assertTrue(!guessed.err.contains("guessed") && !guessed.err.contains("store-cluster-token"), guessed.err);
    }
}
