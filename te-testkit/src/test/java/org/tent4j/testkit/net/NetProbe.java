package org.tent4j.testkit.net;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A process run inside a test host, driven over stdin: {@code LISTEN <address>} opens an echo server there and prints
 * {@code LISTENING <port>}; {@code CONNECT <address> <port> <timeout ms> <bytes>} connects, sends that many bytes, reads
 * them back and prints {@code OK <ms>} or {@code FAIL <exception> <ms> <message>}; {@code EXIT} ends it.
 */
public final class NetProbe {
    public static void main(String[] args) throws Exception {
        PrintWriter out = new PrintWriter(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("READY");
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.split(" ");
            switch (w[0]) {
                case "LISTEN" -> out.println("LISTENING " + listen(w[1]));
                case "CONNECT" -> out.println(connect(w[1], Integer.parseInt(w[2]), Integer.parseInt(w[3]), Integer.parseInt(w[4])));
                case "EXIT" -> {
                    return;
                }
                default -> out.println("ERR unknown command " + w[0]);
            }
        }
    }

    private static int listen(String address) throws IOException {
        ServerSocket server = new ServerSocket(0, 50, InetAddress.getByName(address));
        Thread.ofPlatform().daemon().start(() -> {
            for (;;) {
                try {
                    Socket s = server.accept();
                    Thread.ofPlatform().daemon().start(() -> echo(s));
                } catch (IOException e) {
                    return;
                }
            }
        });
        return server.getLocalPort();
    }

    private static void echo(Socket s) {
        try (s) {
            s.getInputStream().transferTo(s.getOutputStream());
        } catch (IOException ignored) {
            // the client went away
        }
    }

    private static String connect(String address, int port, int timeoutMs, int bytes) {
        long start = System.nanoTime();
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(address, port), timeoutMs);
            s.setSoTimeout(timeoutMs);
            byte[] data = new byte[bytes];
            Thread writer = Thread.ofPlatform().daemon().start(() -> {
                try {
                    OutputStream o = s.getOutputStream();
                    o.write(data);
                    o.flush();
                } catch (IOException ignored) {
                    // the read below reports the failure
                }
            });
            InputStream i = s.getInputStream();
            byte[] back = i.readNBytes(bytes);
            writer.join();
            if (back.length != bytes) {
                return "FAIL short " + ms(start) + " read " + back.length + " of " + bytes;
            }
            return "OK " + ms(start);
        } catch (IOException | InterruptedException e) {
            return "FAIL " + e.getClass().getSimpleName() + " " + ms(start) + " " + e.getMessage();
        }
    }

    private static long ms(long start) {
        return (System.nanoTime() - start) / 1_000_000;
    }
}
