package org.tent4j.samples.jmh;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URL;
import java.util.Enumeration;

import org.junit.jupiter.api.Test;

class BenchmarkListTest {
    @Test
    void jmhBenchmarksWereGenerated() throws Exception {
        // javac 23+ skips class-path annotation processors silently; this fails if the pom loses the processor path
        Enumeration<URL> lists = getClass().getClassLoader().getResources("META-INF/BenchmarkList");
        StringBuilder all = new StringBuilder();
        while (lists.hasMoreElements()) {
            try (var in = lists.nextElement().openStream()) {
                all.append(new String(in.readAllBytes()));
            }
        }
        assertTrue(all.toString().contains("org.tent4j.samples.jmh.LoopbackTransferBenchmark"), all.toString());
    }
}
