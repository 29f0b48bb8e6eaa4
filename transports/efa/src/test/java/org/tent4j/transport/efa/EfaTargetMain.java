package org.tent4j.transport.efa;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

import org.tent4j.api.Permission;
import org.tent4j.spi.Transport;
import org.tent4j.testkit.transport.TestLocalMemory;
import org.tent4j.testkit.transport.TestTransportContext;

/**
 * The target side of {@link EfaCrossProcessTest}, run in a second JVM: opens an efa transport over the provider named
 * in {@code args[0]}, registers {@code args[1]} bytes filled with the pattern of seed {@code args[2]}, prints its
 * segment and buffer descriptor fields, then answers commands on stdin while the progress thread serves the peer's
 * one-sided READs and WRITEs:
 * <pre>
 *   verify OFFSET LENGTH CRC32  ->  ok | bad ACTUAL      (checks bytes a peer wrote)
 *   exit                        ->  exits 0 if every verify was ok, else 3
 * </pre>
 */
public final class EfaTargetMain {
    private EfaTargetMain() {
    }

    public static void main(String[] args) throws Exception {
        String provider = args[0];
        long size = Long.parseLong(args[1]);
        long seed = Long.parseLong(args[2]);
        EfaTransportProvider p = new EfaTransportProvider();
        int mismatches = 0;
        try (TestTransportContext ctx = new TestTransportContext("target", EfaPair.MACHINE, EfaTransportProvider.ID,
                p.options(), Map.of(EfaTransportProvider.OPT_PROVIDER, provider), Duration.ofSeconds(30));
             Arena arena = Arena.ofShared()) {
            Transport t = p.create(ctx);
            try {
                MemorySegment mem = arena.allocate(size, 4096);
                EfaPair.fill(mem, seed);
                TestLocalMemory.Buffer buffer = ctx.memory().register(mem, Permission.READ_WRITE);
                Map<String, String> attrs = t.registerBuffer(buffer).orElseThrow();
                for (var e : t.segmentAttributes().entrySet()) {
                    say("seg " + e.getKey() + "=" + e.getValue());
                }
                say("buffer address=0x" + Long.toHexString(mem.address()) + " length=" + size + " key="
                        + attrs.get(EfaAttributes.KEY) + " base=" + attrs.get(EfaAttributes.BASE));
                say("ready");
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                while ((line = in.readLine()) != null) {
                    String[] w = line.strip().split(" ");
                    if (w[0].equals("verify")) {
                        long actual = EfaPair.crc(mem.asSlice(Long.parseLong(w[1]), Long.parseLong(w[2])));
                        if (actual == Long.parseLong(w[3])) {
                            say("ok");
                        } else {
                            mismatches++;
                            say("bad " + actual);
                        }
                    } else if (w[0].equals("exit")) {
                        break;
                    }
                }
            } finally {
                t.close();
            }
        }
        System.out.flush();
        System.exit(mismatches == 0 ? 0 : 3);
    }

    private static void say(String s) {
        System.out.println(ChildJvm.PREFIX + s);
        System.out.flush();
    }
}
