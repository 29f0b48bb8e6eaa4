package org.tent4j.transport.tcp;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/** A fresh self-signed key pair as the PEM files TLS is configured with, made by the JDK's keytool. */
record TestKeys(Path certificate, Path privateKey) {
    static TestKeys generate(Path dir, String name) throws IOException, InterruptedException, GeneralSecurityException {
        Path store = dir.resolve(name + ".p12");
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        Process p = new ProcessBuilder(keytool.toString(), "-genkeypair", "-alias", name, "-keyalg", "EC",
                "-groupname", "secp256r1", "-dname", "CN=" + name, "-validity", "2", "-ext", "san=ip:127.0.0.1",
                "-keystore", store.toString(), "-storetype", "PKCS12", "-storepass", "changeit", "-keypass", "changeit")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("keytool failed: " + out);
        }
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
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
