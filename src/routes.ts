import { adminRoutes } from './admin/routes.ts';
import { agentRoutes } from './agents/routes.ts';
import { authRoutes } from './auth/routes.ts';
import { dashboardRoutes } from './dashboard/routes.ts';
import { destinationRoutes } from './destinations/routes.ts';
import { deliveryRoutes } from './delivery/routes.ts';
import { endpointRoutes } from './endpoints/routes.ts';
import type { RouteModule } from './http/deps.ts';
import { incidentRoutes } from './incidents/routes.ts';
import { metricsRoutes } from './metrics/routes.ts';
import { memberRoutes } from './orgs/routes.ts';
import { requestRoutes } from './requests/routes.ts';
import { routingRoutes } from './routing/routes.ts';
import { tailRoutes } from './requests/tail-routes.ts';
import { subscriptionRoutes } from './subscriptions/routes.ts';
import { usageRoutes } from './usage/routes.ts';
import { transformationRoutes } from './transformations/routes.ts';

/** Every route module of the API listener: `v1` ones are mounted under /v1 behind the auth hook. */
export const routeModules: { v1: RouteModule[]; root: RouteModule[] } = {
  v1: [
    authRoutes,
    memberRoutes,
    endpointRoutes,
    requestRoutes,
    tailRoutes,
    destinationRoutes,
    deliveryRoutes,
    routingRoutes,
    transformationRoutes,
    incidentRoutes,
    agentRoutes,
    subscriptionRoutes,
    usageRoutes,
  ],
  root: [adminRoutes, dashboardRoutes, metricsRoutes],
};
