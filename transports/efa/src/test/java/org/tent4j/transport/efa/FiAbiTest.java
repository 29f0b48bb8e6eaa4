package org.tent4j.transport.efa;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FiAbi} against the libfabric headers of this machine: a C program prints {@code sizeof}/{@code offsetof} of
 * every field of every layout and the value of every {@code FI_*} constant, and each must equal the Java side.
 */
class FiAbiTest {
    private static final Path HEADER = Path.of("/usr/include/rdma/fabric.h");

    @Test
    void layoutsAndConstantsMatchTheInstalledHeaders(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(ValueLayout.ADDRESS.byteSize() == 8, "the layouts are written for LP64");
        Assumptions.assumeTrue(Files.exists(HEADER), "libfabric headers are not installed (" + HEADER
                + " missing; apt-get install libfabric-dev)");
        Map<String, Long> expected = new LinkedHashMap<>();
        StringBuilder c = new StringBuilder("""
                #include <stdio.h>
                #include <stddef.h>
                #include <rdma/fabric.h>
                #include <rdma/fi_domain.h>
                #include <rdma/fi_endpoint.h>
                #include <rdma/fi_eq.h>
                #include <rdma/fi_cm.h>
                #include <rdma/fi_rma.h>
                #include <rdma/fi_errno.h>
                int main(void) {
                  printf("header_version %lld\\n", (long long) FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION));
                """);
        for (StructLayout s : FiAbi.ALL) {
            String struct = "struct " + s.name().orElseThrow();
            line(c, expected, s.name().orElseThrow() + ".sizeof", "sizeof(" + struct + ")", s.byteSize());
            for (MemoryLayout m : s.memberLayouts()) {
                if (m.name().isEmpty()) {
                    continue; // padding
                }
                String field = m.name().get();
                line(c, expected, s.name().get() + "." + field, "offsetof(" + struct + ", " + field + ")",
                        FiAbi.off(s, field));
                if (m instanceof GroupLayout) {
                    line(c, expected, s.name().get() + "." + field + ".sizeof",
                            "sizeof(((" + struct + " *) 0)->" + field + ")", m.byteSize());
                }
            }
        }
        for (Field f : FiAbi.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getName().startsWith("FI_")
                    && (f.getType() == int.class || f.getType() == long.class)) {
                f.setAccessible(true);
                long value = ((Number) f.get(null)).longValue();
                line(c, expected, f.getName(), f.getName(), value);
            }
        }
        line(c, expected, "API_VERSION", "FI_VERSION(1, 17)", FiAbi.API_VERSION);
        c.append("  return 0;\n}\n");

        Map<String, Long> actual = compileAndRun(dir, c.toString());
        long headerVersion = actual.remove("header_version");
        assertTrue(headerVersion >= FiAbi.API_VERSION, "headers are libfabric " + LibFabric.versionString(
                (int) headerVersion) + ", older than the 1.17 this binding is written against");
        List<String> mismatches = new ArrayList<>();
        for (var e : expected.entrySet()) {
            Long got = actual.get(e.getKey());
            if (got == null || got.longValue() != e.getValue()) {
                mismatches.add(e.getKey() + ": java " + e.getValue() + ", C " + got);
            }
        }
        assertEquals(List.of(), mismatches, "FiAbi differs from the headers of libfabric "
                + LibFabric.versionString((int) headerVersion));
        assertTrue(expected.size() > 250, "checked " + expected.size() + " values");
    }

    private static void line(StringBuilder c, Map<String, Long> expected, String key, String expr, long value) {
        expected.put(key, value);
        c.append("  printf(\"").append(key).append(" %lld\\n\", (long long) (").append(expr).append("));\n");
    }

    private static Map<String, Long> compileAndRun(Path dir, String source) throws Exception {
        Path src = dir.resolve("abi.c");
        Path exe = dir.resolve("abi");
        Files.writeString(src, source);
        String gcc;
        try {
            gcc = run(dir, "gcc", "-o", exe.toString(), src.toString());
        } catch (IOException e) {
            Assumptions.abort("gcc is not installed, so the layouts cannot be checked against the headers: "
                    + e.getMessage());
            return Map.of();
        }
        assertTrue(Files.exists(exe), "gcc failed:\n" + gcc);
        Map<String, Long> out = new LinkedHashMap<>();
        for (String line : run(dir, exe.toString()).split("\n")) {
            String[] kv = line.strip().split(" ");
            if (kv.length == 2) {
                out.put(kv[0], Long.parseLong(kv[1]));
            }
        }
        return out;
    }

    private static String run(Path dir, String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), String.join(" ", cmd) + " did not finish");
        return new String(out, StandardCharsets.UTF_8);
    }
}
