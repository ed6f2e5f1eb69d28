import http from 'node:http';
export interface Answer {
    status: number;
    statusText: string;
    headers: http.IncomingHttpHeaders;
    text: string;
}
export interface Request {
    method: string;
    url: URL;
    headers: Record<string, string>;
    body?: string;
    timeoutMs: number;
}
/** Sends requests to one server, with a keep-alive agent that trusts `ca` when given. */
export declare class Transport {
    private readonly agent;
    constructor(secure: boolean, ca?: string | Buffer);
    /** Sends a request and reads the whole answer. */
    send(req: Request): Promise<Answer>;
    /**
     * Sends a request and returns the answer as it starts, for streams. timeoutMs bounds the
     * wait for the answer's head; a stream is ended by `signal`.
     */
    open(req: Request, signal?: AbortSignal): Promise<http.IncomingMessage>;
    /** Closes idle connections. */
    close(): void;
}
export declare class TimeoutError extends Error {
    name: string;
}
/** Whether a failure to reach the server is worth another try. */
export declare function transient(err: unknown): boolean;
