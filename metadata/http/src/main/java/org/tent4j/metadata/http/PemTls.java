package org.tent4j.metadata.http;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * TLS material from PEM files, as openssl, cert-manager and etcd write them: a certificate chain, an unencrypted
 * PKCS#8 private key ({@code BEGIN PRIVATE KEY}), and CA bundles to trust. Errors name the file and what is wrong.
 */
final class PemTls {
    private static final Pattern PKCS8 = Pattern.compile(
            "-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");
    private static final char[] NO_PASSWORD = new char[0];

    private PemTls() {
    }

    /** A server context presenting {@code certificateChain} with {@code privateKey}. */
    static SSLContext serverContext(Path certificateChain, Path privateKey) throws IOException {
        Certificate[] chain = certificates(certificateChain).toArray(Certificate[]::new);
        PrivateKey key = privateKey(privateKey);
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("server", key, NO_PASSWORD, chain);
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(store, NO_PASSWORD);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf.getKeyManagers(), null, null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot use certificate " + certificateChain + " with key " + privateKey + ": "
                    + e.getMessage(), e);
        }
    }

    /** A trust manager that trusts exactly the certificates in {@code caBundle} (and not the JDK's defaults). */
    static X509TrustManager trustManager(Path caBundle) throws IOException {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            int i = 0;
            for (Certificate c : certificates(caBundle)) {
                store.setCertificateEntry("ca-" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            for (TrustManager tm : tmf.getTrustManagers()) {
                if (tm instanceof X509TrustManager x) {
                    return x;
                }
            }
            throw new IOException("no X.509 trust manager for " + caBundle);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot trust the CA certificates in " + caBundle + ": " + e.getMessage(), e);
        }
    }

    /** A client context trusting {@code trust}. */
    static SSLContext clientContext(X509TrustManager trust) {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, new TrustManager[] {trust}, null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("TLS is not available in this JDK", e);
        }
    }

    private static Collection<? extends Certificate> certificates(Path pem) throws IOException {
        try (InputStream in = Files.newInputStream(pem)) {
            Collection<? extends Certificate> all = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (all.isEmpty() || !(all.iterator().next() instanceof X509Certificate)) {
                throw new IOException(pem + " holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
            }
            return all;
        } catch (GeneralSecurityException e) {
            throw new IOException(pem + " is not a PEM certificate file: " + e.getMessage(), e);
        }
    }

    private static PrivateKey privateKey(Path pem) throws IOException {
        String text = Files.readString(pem, StandardCharsets.US_ASCII);
        Matcher m = PKCS8.matcher(text);
        if (!m.find()) {
            String hint = text.contains("BEGIN RSA PRIVATE KEY") || text.contains("BEGIN EC PRIVATE KEY")
                    ? " (it is PKCS#1/SEC1; convert it with: openssl pkcs8 -topk8 -nocrypt -in " + pem + ")"
                    : text.contains("BEGIN ENCRYPTED PRIVATE KEY") ? " (it is encrypted; an unencrypted key is needed)"
                    : "";
            throw new IOException(pem + " holds no unencrypted PKCS#8 private key (-----BEGIN PRIVATE KEY-----)"
                    + hint);
        }
        byte[] der = Base64.getMimeDecoder().decode(m.group(1));
        for (String algorithm : new String[] {"RSA", "EC", "Ed25519", "RSASSA-PSS"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException notThisOne) {
                // try the next algorithm
            }
        }
        throw new IOException(pem + " holds a private key of an algorithm this JDK cannot read (not RSA, EC or "
                + "Ed25519)");
    }
}
