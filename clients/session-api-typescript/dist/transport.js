// HTTP over node:http and node:https rather than fetch: Node's fetch takes no CA of its own per
// client, and the Session API's certificate is signed by Parley's CA (PARLEY_CA_FILE), which a
// client trusts without NODE_EXTRA_CA_CERTS this way.
import http from 'node:http';
import https from 'node:https';
/** Sends requests to one server, with a keep-alive agent that trusts `ca` when given. */
export class Transport {
    agent;
    constructor(secure, ca) {
        this.agent = secure ? new https.Agent({ keepAlive: true, ...(ca ? { ca } : {}) }) : new http.Agent({ keepAlive: true });
    }
    /** Sends a request and reads the whole answer. */
    async send(req) {
        const res = await this.open(req);
        const chunks = [];
        for await (const chunk of res) {
            chunks.push(chunk);
        }
        return { status: res.statusCode ?? 0, statusText: res.statusMessage ?? '', headers: res.headers, text: Buffer.concat(chunks).toString('utf8') };
    }
    /**
     * Sends a request and returns the answer as it starts, for streams. timeoutMs bounds the
     * wait for the answer's head; a stream is ended by `signal`.
     */
    open(req, signal) {
        const lib = req.url.protocol === 'https:' ? https : http;
        return new Promise((resolve, reject) => {
            const r = lib.request(req.url, { method: req.method, headers: req.headers, agent: this.agent, signal }, (res) => {
                r.setTimeout(0);
                resolve(res);
            });
            r.setTimeout(req.timeoutMs, () => r.destroy(new TimeoutError(`no answer within ${req.timeoutMs} ms`)));
            r.on('error', reject);
            r.end(req.body);
        });
    }
    /** Closes idle connections. */
    close() {
        this.agent.destroy();
    }
}
export class TimeoutError extends Error {
    name = 'TimeoutError';
}
// Codes of a certificate that is not trusted now and will not be on a retry.
const untrusted = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS_CERT_ALTNAME/;
/** Whether a failure to reach the server is worth another try. */
export function transient(err) {
    const code = err?.code ?? '';
    if (untrusted.test(code)) {
        return false;
    }
    return err?.name !== 'AbortError';
}
