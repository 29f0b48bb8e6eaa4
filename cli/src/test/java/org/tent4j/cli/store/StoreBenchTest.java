package org.tent4j.cli.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.ReplicateConfig;
import org.tent4j.store.StoreClock;
import org.tent4j.store.client.StoreClient;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.rpc.MasterServer;

/**
 * store-bench end to end: a real master (leases of 400 ms, so a get-session run renews its session), a node
 * contributing memory, and the bench in this JVM over real gRPC and engines; every get checks what it read.
 */
class StoreBenchTest {
    private static MasterServer server;
    private static TransferEngine nodeEngine;
    private static StoreClient node;
    private static String address;

    @BeforeAll
    static void start() throws Exception {
        server = MasterServer.start(MasterConfig.defaults().withLeaseTtl(Duration.ofMillis(400)), StoreClock.system(),
                "127.0.0.1", 0, 100);
        address = "127.0.0.1:" + server.port();
        nodeEngine = TransferEngine.create(EngineConfig.builder().set(EngineConfig.CONTROL_HOST, "127.0.0.1").build());
        node = StoreClient.builder(nodeEngine, address).connect();
        node.contribute(32 << 20);
    }

    @AfterAll
    static void stop() {
        if (node != null) {
            node.close();
        }
        if (nodeEngine != null) {
            nodeEngine.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private record Result(int rc, String json, String err) {
        long field(String name) {
            Matcher m = Pattern.compile("\"" + name + "\":([0-9.]+|true|false)").matcher(json);
            assertTrue(m.find(), name + " in " + json + " / " + err);
            String v = m.group(1);
            return v.equals("true") ? 1 : v.equals("false") ? 0 : (long) Double.parseDouble(v);
        }
    }

    private static Result bench(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--master", address, "--control-host", "127.0.0.1", "--json"));
        all.addAll(List.of(args));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = StoreBench.run(all.toArray(String[]::new), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(rc, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void getAndGetSessionReadBackEveryValueAndVerifyIt() throws Exception {
        Result put = bench("--mode", "put", "--prefix", "ok", "--size", "3000", "--batch", "8", "--threads", "2",
                "--count", "64", "--warmup", "0s");
        assertEquals(0, put.rc, put.err);
        assertEquals(128, put.field("ops"));

        Result get = bench("--mode", "get", "--prefix", "ok", "--size", "3000", "--batch", "8", "--threads", "2",
                "--count", "64", "--warmup", "0s", "--verify");
        assertEquals(0, get.rc, get.err);
        assertEquals(128, get.field("ops"));
        assertEquals(0, get.field("mismatches"));
        assertEquals(1, get.field("verified"));

        Result single = bench("--mode", "get-session", "--prefix", "ok", "--size", "3000", "--batch", "1", "--threads", "1",
                "--count", "64", "--warmup", "0s", "--verify");
        assertEquals(0, single.rc, single.err);
        assertEquals(64, single.field("ops"));
        assertEquals(1, single.field("sessionFetches"));

        // leases of 400 ms over a run of 1.2 s: the session is fetched again as they end, and no read fails
        Result session = bench("--mode", "get-session", "--prefix", "ok", "--size", "3000", "--batch", "8", "--threads", "2",
                "--count", "64", "--warmup", "0s", "--duration", "1200ms", "--verify");
        assertEquals(0, session.rc, session.err);
        assertTrue(session.field("ops") >= 128, session.json);
        assertEquals(0, session.field("errors"));
        assertEquals(0, session.field("mismatches"));
        assertTrue(session.field("sessionFetches") >= 4, "2 threads, each renewing at least once: " + session.json);
    }

    @Test
    void verifyCountsWrongTornAndCorruptValues() throws Exception {
        int size = 4096;
        MemorySegment body = BenchValues.body(size);
        String prefix = "bad/0";
        // what the bench writes for key n: the body with n's stamps
        List<byte[]> right = new ArrayList<>();
        for (int n = 0; n < 6; n++) {
            MemorySegment v = MemorySegment.ofArray(new byte[size]).copyFrom(body);
            BenchValues.stamp(v, prefix, n);
            right.add(v.toArray(ValueLayout.JAVA_BYTE));
        }
        byte[] wrongKey = right.get(4).clone();
        byte[] torn = right.get(1).clone();
        System.arraycopy(right.get(2), 1024, torn, 1024, 512);
        byte[] corrupt = right.get(2).clone();
        corrupt[2000] ^= 1;
        byte[] zeros = new byte[size];
        List<byte[]> stored = List.of(right.get(0), torn, corrupt, wrongKey, zeros, right.get(5));
        for (int n = 0; n < stored.size(); n++) {
            node.put(prefix + "/" + n, stored.get(n), ReplicateConfig.replicas(1));
        }
        for (String mode : List.of("get", "get-session")) {
            Result r = bench("--mode", mode, "--prefix", "bad", "--size", "4k", "--batch", "3", "--threads", "1",
                    "--count", "6", "--warmup", "0s", "--verify");
            assertEquals(1, r.rc, mode + ": mismatches fail the run");
            assertEquals(6, r.field("ops"), mode);
            assertEquals(4, r.field("mismatches"), mode + ": the torn, corrupt, other key's and unwritten values");
        }
        Result unchecked = bench("--mode", "get", "--prefix", "bad", "--size", "4k", "--batch", "3", "--threads", "1",
                "--count", "6", "--warmup", "0s");
        assertEquals(0, unchecked.rc, "without --verify nothing is compared");
    }

    @Test
    void getSessionOverMoreKeysThanOneFetchIsRefused() throws Exception {
        Result r = bench("--mode", "get-session", "--count", "70000");
        assertEquals(2, r.rc);
        assertTrue(r.err.contains("at most 65536 keys: --count 70000"), r.err);
    }
}
