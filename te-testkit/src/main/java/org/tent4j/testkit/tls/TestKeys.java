package org.tent4j.testkit.tls;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A fresh self-signed key pair as the PEM files TLS is configured with, made by the JDK's keytool.
 *
 * @param certificate the PEM certificate
 * @param privateKey  the PKCS#8 PEM private key
 */
public record TestKeys(Path certificate, Path privateKey) {
    /**
     * One key pair per name, made by keytool processes running side by side.
     *
     * @param dir   where the files go
     * @param names one key pair per name
     * @return the key pairs, in the order of {@code names}
     * @throws IOException when keytool cannot run or fails
     * @throws InterruptedException when the waiting thread is interrupted
     * @throws GeneralSecurityException when a key cannot be converted to PEM
     */
    public static List<TestKeys> generate(Path dir, String... names) throws IOException, InterruptedException,
            GeneralSecurityException {
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        List<Process> running = new ArrayList<>();
        for (String name : names) {
            running.add(new ProcessBuilder(keytool.toString(), "-J-XX:TieredStopAtLevel=1", "-genkeypair",
                    "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + name,
                    "-validity", "2", "-ext", "san=ip:127.0.0.1", "-keystore", dir.resolve(name + ".p12").toString(),
                    "-storetype", "PKCS12", "-storepass", "changeit", "-keypass", "changeit")
                    .redirectErrorStream(true).start());
        }
        List<TestKeys> keys = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            Process p = running.get(i);
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException("keytool failed: " + out);
            }
            keys.add(export(dir, names[i]));
        }
        return keys;
    }

    private static TestKeys export(Path dir, String name) throws IOException, GeneralSecurityException {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve(name + ".p12"))) {
            ks.load(in, "changeit".toCharArray());
        }
        PrivateKey key = (PrivateKey) ks.getKey(name, "changeit".toCharArray());
        Path cert = dir.resolve(name + ".crt");
        Path pkcs8 = dir.resolve(name + ".key");
        Files.writeString(cert, pem("CERTIFICATE", ks.getCertificate(name).getEncoded()));
        Files.writeString(pkcs8, pem("PRIVATE KEY", key.getEncoded()));
        return new TestKeys(cert, pkcs8);
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
