// oidc-provider ships no types; the SSO test uses a small part of it (a provider on loopback).
declare module 'oidc-provider';
