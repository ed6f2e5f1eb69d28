// The Session API's bodies (pkg/wire) and Parley's neutral conversation model
// (pkg/conversation), as JSON: members a server of a newer minor version adds come through
// untouched, since nothing here drops unknown members.
/** Problem types (RFC 9457 `type`) the Session API answers with. */
export const Problems = {
    malformed: 'https://parley.dev/problems/malformed',
    unauthorized: 'https://parley.dev/problems/unauthorized',
    forbidden: 'https://parley.dev/problems/forbidden',
    notFound: 'https://parley.dev/problems/not-found',
    conflict: 'https://parley.dev/problems/conflict',
    tooLarge: 'https://parley.dev/problems/too-large',
    invalid: 'https://parley.dev/problems/invalid',
    overloaded: 'https://parley.dev/problems/overloaded',
    unavailable: 'https://parley.dev/problems/storage-unavailable',
    notReady: 'https://parley.dev/problems/not-ready',
};
