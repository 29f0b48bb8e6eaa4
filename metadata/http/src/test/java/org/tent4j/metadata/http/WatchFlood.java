package org.tent4j.metadata.http;

import java.io.*;
import java.net.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;

/**
 * Measurement, not a test (docs/PERFORMANCE.md): N raw-socket long polls against one server in this JVM, with the
 * default limits; prints how many were parked or refused 503, the heap they took, and how long one PUT takes to
 * answer them all. {@code java -cp ... org.tent4j.metadata.http.WatchFlood 5000}
 */
public final class WatchFlood {
    private WatchFlood() {
    }

    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]);
        try (HttpMetadataServer server = HttpMetadataServer.start("127.0.0.1", 0)) {
            int port = server.port();
            long before = used();
            List<Socket> sockets = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Socket s = new Socket("127.0.0.1", port);
                s.setSoTimeout(60_000);
                s.getOutputStream().write(("GET /metadata/watch?key=k&version=x-0&timeout_ms=60000 HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                sockets.add(s);
            }
            // a first poll with a made-up version answers at once; ask again with the real version
            String version = null;
            int busy = 0, ok = 0;
            ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor();
            List<Future<String>> lines = new ArrayList<>();
            for (Socket s : sockets) lines.add(pool.submit(() -> statusAndVersion(s)));
            for (Future<String> f : lines) { String l = f.get(); if (l.startsWith("503")) busy++; else { ok++; version = l.substring(4); } }
            System.out.println("first round: " + ok + " answered at once (unknown version), " + busy + " 503");
            for (Socket s : sockets) s.close();
            sockets.clear();
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                Socket s = new Socket("127.0.0.1", port);
                s.setSoTimeout(60_000);
                s.getOutputStream().write(("GET /metadata/watch?key=k&version=" + version + "&timeout_ms=60000 HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                sockets.add(s);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            int parked;
            while ((parked = server.watchesInProgress()) < Math.min(n, 4096) && System.nanoTime() < deadline) {
                Thread.sleep(50); // a measurement tool polling a gauge, not a test
            }
            long during = used();
            System.out.printf("%d watches sent in %d ms; %d parked; heap %d MiB -> %d MiB (client sockets included)%n", n, (System.nanoTime() - t0) / 1_000_000, parked, before >> 20, during >> 20);
            lines.clear();
            for (Socket s : sockets) lines.add(pool.submit(() -> statusAndVersion(s)));
            long t1 = System.nanoTime();
            HttpURLConnection put = (HttpURLConnection) URI.create(server.endpoint() + "?key=k").toURL().openConnection();
            put.setRequestMethod("PUT"); put.setDoOutput(true); put.getOutputStream().write("v".getBytes()); 
            System.out.println("PUT " + put.getResponseCode());
            busy = 0; ok = 0;
            for (Future<String> f : lines) { String l = f.get(); if (l.startsWith("503")) busy++; else if (l.startsWith("200")) ok++; }
            System.out.printf("after the PUT: %d saw 200 within %d ms, %d were refused 503%n", ok, (System.nanoTime() - t1) / 1_000_000, busy);
            for (Socket s : sockets) s.close();
            pool.shutdownNow();
        }
    }
    static String statusAndVersion(Socket s) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.ISO_8859_1));
        String status = r.readLine(); String version = "";
        for (String h; (h = r.readLine()) != null && !h.isEmpty(); ) if (h.toLowerCase().startsWith("x-tent4j-version:")) version = h.substring(h.indexOf(':') + 1).strip();
        return status.split(" ")[1] + " " + version;
    }
    static long used() { Runtime rt = Runtime.getRuntime(); System.gc(); return rt.totalMemory() - rt.freeMemory(); }
}
