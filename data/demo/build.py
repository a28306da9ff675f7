#!/usr/bin/env python3
"""Generate the ragmeta demo dataset (documents.jsonl and questions.jsonl).

This script is the source of truth of the demo dataset: it holds the full text
of the 30 documents of "Nébulis Télécom", a FICTIONAL telecom operator, and the
50 evaluation questions. Passage offsets are never written by hand: each
question lists its passages as exact substrings of a document, and the script
computes ``start``/``end`` with ``str.find``, asserting that the substring
occurs exactly once (or that the requested occurrence exists).

Pure standard library; the output is deterministic (running the script twice
gives byte-identical files).

Usage::

    python data/demo/build.py            # writes the two JSONL files next to this script
    python data/demo/build.py --out DIR  # writes them to DIR instead
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

CATEGORIES = ("offres", "appareils", "facturation", "procedures", "depannage", "conditions")
TYPES = (
    "factual",
    "procedural",
    "comparison",
    "yes_no",
    "list",
    "numerical",
    "multi_passage",
    "definition",
)

NBSP = "\u00a0"

# ---------------------------------------------------------------------------
# Documents
# ---------------------------------------------------------------------------
# Texts are written with ASCII apostrophes and ordinary spaces. Some documents
# are then given a more "typographic" look, as in a real corpus assembled from
# several sources:
#   typo=True  -> ASCII apostrophes become typographic apostrophes (’)
#   nbsp=True  -> the space before ":", "€" and "%" becomes a non-breaking space
# The same transformation is applied to the passages of the questions that
# point to the document, so offsets always match.

DOCS = []


def transform(text, typo=False, nbsp=False):
    if typo:
        text = text.replace("'", "\u2019")
    if nbsp:
        for mark in (":", "€", "%"):
            text = text.replace(" " + mark, NBSP + mark)
    return text


def doc(external_id, title, category, text, typo=False, nbsp=False):
    assert category in CATEGORIES, category
    assert external_id not in {d["external_id"] for d in DOCS}, external_id
    DOCS.append(
        {
            "external_id": external_id,
            "title": transform(title, typo=typo, nbsp=nbsp),
            "category": category,
            "text": transform(text.strip(), typo=typo, nbsp=nbsp),
            "typo": typo,
            "nbsp": nbsp,
        }
    )


doc("doc-01", "Les forfaits mobiles Nébulis", "offres", """
# Les forfaits mobiles Nébulis

Nébulis Télécom propose quatre forfaits mobiles sans engagement, disponibles avec une carte SIM classique ou en eSIM. Tous fonctionnent sur notre réseau 4G ; les forfaits Liberté 100 Go 5G et Infini 250 Go 5G donnent en plus accès à la 5G partout où elle est déployée, sans supplément.

## Tableau récapitulatif

| Forfait | Appels et SMS | Internet mobile en France | Internet depuis l'UE et les DOM | Prix mensuel |
|---|---|---|---|---|
| Essentiel 2 h | 2 h d'appels, SMS et MMS illimités | 1 Go | 1 Go | 4,99 € |
| Liberté 30 Go | Appels, SMS et MMS illimités | 30 Go en 4G | 10 Go | 9,99 € |
| Liberté 100 Go 5G | Appels, SMS et MMS illimités | 100 Go en 5G | 20 Go | 14,99 € |
| Infini 250 Go 5G | Appels, SMS et MMS illimités | 250 Go en 5G | 35 Go | 24,99 € |

Les prix sont indiqués TTC, par mois et par ligne. Des frais d'activation de 10 € sont facturés une seule fois, sur la première facture, pour chaque nouvelle ligne.

## Le détail de chaque forfait

### Essentiel 2 h

Pensé pour ceux qui appellent peu : un premier téléphone pour un enfant, une ligne de secours ou un usage occasionnel. Au-delà des 2 heures d'appels incluses, les communications sont facturées 0,05 € la minute. Les SMS et MMS restent illimités.

### Liberté 30 Go

Le forfait du quotidien : appels illimités vers les fixes et les mobiles de France métropolitaine et des DOM, et 30 Go pour naviguer, écouter de la musique ou regarder quelques vidéos en déplacement.

### Liberté 100 Go 5G

Notre forfait le plus choisi. Il inclut la 5G (avec un téléphone compatible) et 20 Go utilisables dans l'Union européenne et les DOM, idéal pour les vacances.

### Infini 250 Go 5G

Le forfait le plus complet. En plus des 250 Go en 5G, il comprend :

- l'utilisation de votre forfait au Royaume-Uni, en Suisse et en Andorre dans les mêmes conditions que dans l'Union européenne ;
- l'option Multi-SIM incluse, pour une seconde carte SIM ou eSIM (montre connectée, tablette, routeur de poche) ;
- les appels illimités depuis la France vers les fixes de 50 destinations internationales.

## Quand l'enveloppe internet est épuisée

Aucun hors-forfait n'est facturé sur l'internet mobile. Une fois votre enveloppe consommée, le débit est réduit à 128 kb/s jusqu'à la date de renouvellement de votre forfait. Vous êtes prévenu par SMS à 80 % puis à 100 % de votre consommation. Pour retrouver le plein débit immédiatement, ajoutez une Recharge Data 5 Go (5 €) ou 20 Go (10 €) depuis l'appli Nébulis & Moi.

## Avantage Duo : 5 € de remise par ligne

Vous êtes aussi abonné à une Box Fibre Nébulis ? Chaque forfait Liberté 100 Go 5G ou Infini 250 Go 5G rattaché au même compte client bénéficie d'une remise de 5 € par mois, dans la limite de 4 lignes. La remise est appliquée automatiquement, sans démarche de votre part, tant que l'abonnement box reste actif.

## Forfait avec un smartphone

Souscrits seuls, nos forfaits sont sans engagement. Si vous achetez un smartphone à prix réduit avec un forfait Liberté 100 Go 5G ou Infini 250 Go 5G, le forfait est assorti d'un engagement de 24 mois. Les prix des téléphones figurent dans notre catalogue smartphones.

## Comment souscrire ?

- En ligne sur www.nebulis.example : la carte SIM est livrée en 2 à 3 jours ouvrés, l'eSIM est disponible immédiatement.
- En boutique, sur présentation d'une pièce d'identité et d'un RIB.
- Par téléphone au 0 800 000 000 (appel gratuit).

Vous souhaitez conserver votre numéro actuel ? Il suffit de nous communiquer votre code RIO lors de la souscription : nous nous occupons du reste, y compris de la résiliation de votre ancien forfait.
""")


doc("doc-02", "Les offres Box Fibre", "offres", """
# Les offres Box Fibre

La fibre optique jusqu'à l'abonné (FTTH) offre des débits bien supérieurs à ceux de l'ADSL et une connexion stable, quelle que soit la distance entre votre logement et le central téléphonique. Nébulis Télécom propose trois offres fibre, toutes soumises à un engagement de 12 mois.

## Comparatif des offres

| Offre | Débit descendant max. | Débit montant max. | Équipements fournis | Télévision | Prix la 1re année | Prix à partir du 13e mois |
|---|---|---|---|---|---|---|
| Fibre Essentielle | 500 Mb/s | 500 Mb/s | Box N6 (Wi-Fi 6) | Appli Nébulis TV, 40 chaînes | 24,99 €/mois | 29,99 €/mois |
| Fibre Plus | 2 Gb/s | 900 Mb/s | Box N6E (Wi-Fi 6E) et décodeur TV 4K | 150 chaînes | 34,99 €/mois | 39,99 €/mois |
| Fibre Ultra | 8 Gb/s | 8 Gb/s | Box N7 (Wi-Fi 7), décodeur TV 4K et un répéteur N-Mesh | 220 chaînes et Pack Cinéma inclus | 49,99 €/mois | 54,99 €/mois |

Les débits indiqués sont des débits maximaux théoriques, mesurés en sortie de box. Le débit réellement obtenu dépend notamment de vos équipements et du Wi-Fi. Les 8 Gb/s de la Fibre Ultra sont partagés entre tous les appareils connectés : pour en profiter sur un seul ordinateur, celui-ci doit être relié au port Ethernet 10 Gb/s de la box avec une carte réseau compatible.

## Ce qui est inclus dans toutes les offres

- Internet illimité par la fibre, sans limite de volume.
- Une ligne de téléphone fixe avec les appels illimités vers les fixes de France métropolitaine et des DOM.
- L'accès à Mon Nébulis et à l'appli Nébulis & Moi pour suivre vos factures et gérer vos options.
- L'assistance technique 7 jours sur 7 au 0 800 000 001.

## Les avantages de chaque offre

### Fibre Essentielle

L'offre idéale pour une personne seule ou un couple qui utilise surtout internet. La télévision est accessible sur l'appli Nébulis TV (smartphone, tablette, ordinateur ou téléviseur connecté), sans décodeur, sur un seul écran à la fois.

### Fibre Plus

Pensée pour les familles : la Box N6E ajoute la bande Wi-Fi 6 GHz, moins encombrée, et le décodeur TV 4K donne accès à 150 chaînes. Vous pouvez regarder la télévision sur 3 écrans simultanément, enregistrer jusqu'à 100 heures de programmes dans le cloud, et les appels sont illimités vers les fixes et les mobiles de France métropolitaine et des DOM.

### Fibre Ultra

Notre offre la plus performante : Box N7 compatible Wi-Fi 7, répéteur N-Mesh inclus pour couvrir les grands logements, 220 chaînes, Pack Cinéma inclus, 4 écrans simultanés et 300 heures d'enregistrement. Les appels sont illimités vers les fixes et les mobiles de France métropolitaine et des DOM, ainsi que vers les fixes de 100 destinations internationales.

## Frais à prévoir

- Frais de mise en service : 49 €, facturés sur la première facture.
- Installation standard par un technicien : incluse, sans supplément.
- Frais de résiliation : 59 €, facturés à la clôture de la ligne.

## Éligibilité, commande et installation

1. Testez votre éligibilité sur www.nebulis.example avec votre adresse ou votre numéro de téléphone fixe.
2. Commandez en ligne, en boutique ou par téléphone. La box est livrée en 3 à 5 jours ouvrés, ou disponible immédiatement en boutique.
3. Un technicien vient raccorder votre logement. Comptez en moyenne 10 à 15 jours entre la commande et le raccordement. Le rendez-vous est fixé sur un créneau de 2 heures, choisi lors de la commande.
4. Le jour du rendez-vous, le technicien installe si nécessaire la prise terminale optique (PTO), branche votre box et vérifie le débit avec vous.

Si votre logement dispose déjà d'une prise fibre active, utilisée par l'occupant précédent, la mise en service peut se faire sans technicien, en 3 à 7 jours.

## Pas encore éligible à la fibre ?

Nous vous proposons la Box Cuivre (ADSL ou VDSL2) à 25,99 €/mois, sans engagement. Lorsque la fibre arrive chez vous, le passage à une offre fibre se fait sans frais de mise en service.

Bon à savoir : avec une offre Box Fibre, vos forfaits mobiles Liberté 100 Go 5G et Infini 250 Go 5G bénéficient de l'Avantage Duo, soit 5 € de remise par mois et par ligne.
""", typo=True)


doc("doc-03", "Box Cuivre : internet par l'ADSL et le VDSL2", "offres", """
# Box Cuivre : internet par l'ADSL et le VDSL2

Votre logement n'est pas encore raccordable à la fibre ? La Box Cuivre vous permet de profiter d'internet et du téléphone fixe grâce à la ligne téléphonique en cuivre existante.

## L'offre en bref

- Prix : 25,99 €/mois, sans engagement.
- Équipement : Box N6 version cuivre.
- Téléphone : appels illimités vers les fixes de France métropolitaine et des DOM.
- Télévision : décodeur TV 4K en option à 5 €/mois, si votre débit le permet.
- Frais de mise en service : 49 €. Frais de résiliation : 59 €.

## ADSL ou VDSL2 : quelle différence ?

Les deux technologies utilisent la même paire de cuivre, mais pas de la même façon. L'ADSL2+ atteint jusqu'à 15 Mb/s en réception et 1 Mb/s en envoi ; il fonctionne même lorsque le logement est éloigné du central, avec un débit qui baisse avec la distance. Le VDSL2 peut monter jusqu'à 50 Mb/s en réception et 8 Mb/s en envoi, mais seulement pour les logements situés à moins d'un kilomètre environ du central. Au-delà, la box bascule automatiquement en ADSL2+. Vous n'avez rien à choisir : la technologie la plus rapide disponible sur votre ligne est utilisée.

## La télévision avec la Box Cuivre

Le décodeur TV 4K nécessite un débit stable d'au moins 8 Mb/s. Le test d'éligibilité vous indique si votre ligne le permet. Sinon, vous pouvez regarder la télévision sur l'appli Nébulis TV, en qualité adaptée à votre débit.

## Et quand la fibre arrive ?

Le réseau cuivre est progressivement fermé en France au profit de la fibre. Lorsque votre adresse devient éligible, nous vous prévenons par e-mail. Le passage de la Box Cuivre à une offre fibre se fait sans frais de mise en service ; seul l'engagement de 12 mois de l'offre fibre s'applique. Votre numéro de fixe est conservé.

## Installation

La Box Cuivre s'installe seul : branchez le câble fourni entre le port DSL de la box et la prise téléphonique murale, puis mettez la box sous tension. La ligne est activée en 7 jours ouvrés en moyenne après la commande. Une intervention de technicien n'est nécessaire que si la ligne n'est plus en service ; elle est alors gratuite.
""")


doc("doc-04", "Les options de votre forfait mobile", "offres", """
# Les options de votre forfait mobile

Toutes les options se souscrivent et se résilient à tout moment depuis l'appli Nébulis & Moi, dans Mon Nébulis ou au 0 800 000 000. Les options mensuelles sont sans engagement : en cas de résiliation, elles prennent fin à la fin du mois en cours.

## Recharges internet

| Recharge | Prix | Validité |
|---|---|---|
| Recharge Data 5 Go | 5 € | jusqu'à la fin du cycle de facturation en cours |
| Recharge Data 20 Go | 10 € | jusqu'à la fin du cycle de facturation en cours |

Les Go d'une recharge qui n'ont pas été utilisés ne sont pas reportés sur le mois suivant. Vous pouvez acheter plusieurs recharges dans le même mois.

## Option International : 5 €/mois

Appels illimités depuis la France vers les fixes de 50 destinations (dont l'Europe, le Maghreb et l'Amérique du Nord) et vers les mobiles des États-Unis, du Canada et de la Chine. Les abonnés Infini 250 Go 5G ont déjà les fixes de ces 50 destinations inclus : l'option leur ajoute les mobiles des trois pays cités.

## Option Multi-SIM : 3 €/mois

Une seconde carte SIM ou eSIM qui partage l'enveloppe internet de votre forfait : pour une tablette, une montre connectée ou le routeur de poche Nébulis Go. Une montre connectée peut aussi passer et recevoir vos appels avec votre numéro. L'option est incluse dans le forfait Infini 250 Go 5G.

## Assurance Sérénité Mobile

| Prix d'achat du téléphone assuré | Prix mensuel |
|---|---|
| Moins de 500 € | 7,99 € |
| 500 € et plus | 11,99 € |

L'assurance couvre la casse, l'oxydation et le vol avec effraction ou agression, dans la limite de 2 sinistres par période de 12 mois. Une franchise de 49 € reste à votre charge pour chaque sinistre. Elle doit être souscrite dans les 30 jours qui suivent l'achat du téléphone, que celui-ci ait été acheté chez Nébulis ou ailleurs. L'assurance est sans engagement et peut être arrêtée chaque mois.

## Options gratuites

- Contrôle parental : bloque l'accès aux sites réservés aux adultes et aux services surtaxés.
- Blocage des numéros et SMS surtaxés.
- Appels Wi-Fi : téléphonez par le Wi-Fi là où le réseau mobile passe mal, avec un téléphone compatible.
- Messagerie vocale visuelle dans l'appli Nébulis & Moi.

## Pour voyager

Les Pass Voyage (1 Go, 5 Go ou 10 Go) permettent d'utiliser internet hors de l'Union européenne à prix maîtrisé. Ils sont décrits dans la fiche « Voyager à l'étranger avec votre mobile ».
""")


doc("doc-05", "Bouquets et options TV", "offres", """
# Bouquets et options TV

Enrichissez votre télévision avec nos bouquets thématiques. Ils sont disponibles sur le décodeur TV 4K (Fibre Plus, Fibre Ultra, Box Cuivre avec décodeur) et sur l'appli Nébulis TV pour toutes les offres box, y compris Fibre Essentielle.

## Les bouquets

| Option | Contenu | Prix mensuel |
|---|---|---|
| Pack Cinéma | 5 chaînes cinéma et un catalogue de 2 000 films à la demande | 9,99 € (inclus dans Fibre Ultra) |
| Pack Sport | 8 chaînes de sport, dont des compétitions européennes de football et de rugby | 14,99 € |
| Pack Jeunesse | 10 chaînes jeunesse et des dessins animés sans publicité | 4,99 € |
| Multi-TV | un décodeur TV 4K supplémentaire pour une autre pièce | 5 € |

Tous les bouquets sont sans engagement. Une résiliation prend effet à la fin du mois en cours.

## Activation

Un bouquet souscrit depuis la télécommande, l'appli ou Mon Nébulis est activé en 15 minutes environ. Si les chaînes n'apparaissent pas au-delà de ce délai, redémarrez le décodeur.

## Multi-TV

L'option Multi-TV permet d'ajouter jusqu'à deux décodeurs supplémentaires par foyer, chacun facturé 5 € par mois. Chaque décodeur supplémentaire donne accès aux mêmes chaînes et bouquets que le décodeur principal. Il se connecte à la box par câble Ethernet, par Wi-Fi ou via un répéteur N-Mesh.

## Replay et enregistrements

Le replay des principales chaînes est disponible pendant 7 jours. Les enregistrements sont stockés dans le cloud : 100 heures avec Fibre Plus et la Box Cuivre, 300 heures avec Fibre Ultra. Ils sont conservés 12 mois, puis supprimés automatiquement.

## Contrôle parental TV

Le code parental par défaut est 1234. Nous vous conseillons de le modifier dès l'installation, dans Paramètres > Contrôle parental. Ce code est demandé pour regarder les programmes déconseillés aux moins de 16 ans après 22 h 30 et pour tout achat de vidéo à la demande.
""")


doc("doc-06", "Guide des tarifs Nébulis Télécom", "offres", """
# Guide des tarifs Nébulis Télécom

Tarifs en vigueur au 1er mars 2025 pour les clients particuliers, en France métropolitaine. Tous les prix sont indiqués en euros toutes taxes comprises (TTC), sauf mention contraire. Ce guide fait partie des documents contractuels : en cas de différence avec une publicité ou une brochure, c'est lui qui fait foi.

## Sommaire

1. Forfaits mobiles
2. Communications hors forfait et numéros spéciaux
3. Options mobiles
4. Appels et SMS vers l'international depuis la France
5. Utilisation du mobile à l'étranger
6. Offres box
7. Options TV
8. Équipements
9. Frais de service
10. Remises et avantages
11. Engagement et résiliation

## 1. Forfaits mobiles

| Forfait | Appels | SMS / MMS | Internet en France | Internet UE et DOM | Prix mensuel |
|---|---|---|---|---|---|
| Essentiel 2 h | 2 h | illimités | 1 Go | 1 Go | 4,99 € |
| Liberté 30 Go | illimités | illimités | 30 Go (4G) | 10 Go | 9,99 € |
| Liberté 100 Go 5G | illimités | illimités | 100 Go (5G) | 20 Go | 14,99 € |
| Infini 250 Go 5G | illimités | illimités | 250 Go (5G) | 35 Go | 24,99 € |

Frais d'activation : 10 € par ligne, facturés une seule fois. Les forfaits souscrits sans téléphone sont sans engagement.

Les appels, SMS et MMS illimités s'entendent vers les numéros fixes et mobiles de France métropolitaine et des DOM, hors numéros spéciaux, numéros surtaxés et numéros en cours de portabilité, pour un usage personnel et non lucratif. Ils sont limités à 250 correspondants différents par mois ; chaque appel est coupé au bout de 3 heures et peut être renouvelé.

Le forfait Infini 250 Go 5G comprend également :

- l'option Multi-SIM (valeur 3 €/mois) ;
- les appels illimités vers les fixes de 50 destinations internationales ;
- l'utilisation du forfait au Royaume-Uni, en Suisse et en Andorre comme dans l'Union européenne.

### Internet mobile au-delà de l'enveloppe

Aucun hors-forfait n'est facturé sur internet en France : au-delà de l'enveloppe, le débit est réduit à 128 kb/s jusqu'au renouvellement du forfait. Des recharges permettent de retrouver le plein débit (voir la partie 3).

## 2. Communications hors forfait et numéros spéciaux

| Communication | Tarif |
|---|---|
| Appels au-delà des 2 h incluses (Essentiel 2 h) | 0,05 €/min, facturés à la seconde dès la première seconde |
| Numéros d'urgence | gratuits |
| Numéros verts (0800 à 0805) | gratuits |
| Numéros à coût partagé (08 hors numéros verts) | prix d'un appel normal, décompté du forfait, plus le coût du service fixé par l'éditeur |
| Numéros courts et SMS surtaxés | coût du service fixé par l'éditeur, indiqué en début d'appel |
| Service client Nébulis (0 800 000 000) et assistance technique (0 800 000 001) | gratuits |
| Messagerie vocale (0 800 000 555) depuis un mobile Nébulis | gratuite |

Le coût du service des numéros surtaxés est fixé par l'éditeur du service et reversé à celui-ci : Nébulis ne fait que le collecter. Vous pouvez bloquer gratuitement ces numéros depuis Mon Nébulis.

## 3. Options mobiles

| Option | Prix | Conditions |
|---|---|---|
| Recharge Data 5 Go | 5 € | valable jusqu'à la fin du cycle en cours |
| Recharge Data 20 Go | 10 € | valable jusqu'à la fin du cycle en cours |
| Option International | 5 €/mois | fixes de 50 destinations, mobiles des États-Unis, du Canada et de la Chine |
| Option Multi-SIM | 3 €/mois | incluse dans Infini 250 Go 5G |
| Assurance Sérénité Mobile, téléphone de moins de 500 € | 7,99 €/mois | franchise de 49 € par sinistre |
| Assurance Sérénité Mobile, téléphone de 500 € et plus | 11,99 €/mois | franchise de 49 € par sinistre |
| Contrôle parental, blocage des numéros surtaxés, appels Wi-Fi, messagerie vocale visuelle | gratuit | sur demande |

Les options mensuelles sont sans engagement. Une option souscrite en cours de mois est facturée au prorata du nombre de jours restants.

## 4. Appels et SMS vers l'international depuis la France

Ces tarifs s'appliquent aux appels passés depuis la France (mobile ou ligne fixe box) vers un numéro étranger, en dehors des destinations incluses dans votre offre ou dans l'Option International.

| Destination | Appel | SMS | MMS |
|---|---|---|---|
| Union européenne, Royaume-Uni, Suisse | 0,19 €/min | 0,25 € | 0,50 € |
| États-Unis, Canada | 0,19 €/min | 0,25 € | 0,50 € |
| Reste du monde | 0,79 €/min | 0,25 € | 0,50 € |

Les appels vers l'international sont facturés à la seconde après une première minute indivisible.

## 5. Utilisation du mobile à l'étranger

### Les zones

- Zone UE : les 27 pays de l'Union européenne, l'Islande, le Liechtenstein et la Norvège, ainsi que les DOM (Guadeloupe, Martinique, Guyane, La Réunion, Mayotte).
- Zone 2 : Royaume-Uni, Suisse, Andorre, États-Unis, Canada, Maroc, Algérie, Tunisie et Turquie.
- Zone 3 : tous les autres pays.

### Depuis la zone UE

Vos appels, SMS et MMS sont décomptés de votre forfait comme en France, y compris vers la France et entre pays de la zone. L'internet mobile est utilisable dans la limite de l'enveloppe UE de votre forfait : 1 Go (Essentiel 2 h), 10 Go (Liberté 30 Go), 20 Go (Liberté 100 Go 5G) ou 35 Go (Infini 250 Go 5G). Au-delà de cette enveloppe, et tant que l'enveloppe France n'est pas épuisée, chaque Go supplémentaire consommé dans la zone UE est facturé 1,80 €.

Avec Infini 250 Go 5G, le Royaume-Uni, la Suisse et Andorre sont traités comme la zone UE.

### Depuis les zones 2 et 3, hors Pass Voyage

| Usage | Zone 2 | Zone 3 |
|---|---|---|
| Appel émis (vers tous pays) | 1,50 €/min | 3,00 €/min |
| Appel reçu | 0,50 €/min | 1,50 €/min |
| SMS envoyé | 0,30 € | 0,50 € |
| SMS reçu | gratuit | gratuit |
| Internet mobile | 2 € par Mo | 10 € par Mo |

Les appels émis et reçus sont facturés à la seconde après une première minute indivisible. Internet est facturé par paliers de 10 ko.

### Pass Voyage (zones 2 et 3)

| Pass | Volume | Validité | Prix |
|---|---|---|---|
| Pass Monde 1 Go | 1 Go | 7 jours | 10 € |
| Pass Monde 5 Go | 5 Go | 30 jours | 25 € |
| Pass Monde 10 Go | 10 Go | 30 jours | 40 € |

Un Pass Voyage ne couvre que l'internet mobile. Il démarre à la première connexion dans un pays des zones 2 ou 3 et n'est pas renouvelé automatiquement.

### Plafond de sécurité

Hors Pass Voyage, l'internet mobile utilisé dans les zones 2 et 3 est bloqué dès que la consommation atteint 50 € HT (60 € TTC) sur un même cycle de facturation. Vous êtes prévenu par SMS à 80 % de ce montant. Vous pouvez demander à lever le blocage au 0 800 000 000.

### Réseaux satellitaires (avions, bateaux)

| Usage | Tarif |
|---|---|
| Appel émis ou reçu | 5 €/min |
| SMS envoyé | 0,50 € |
| Internet mobile | 15 € par Mo |

Ces communications ne sont incluses dans aucun forfait ni aucun Pass Voyage.

## 6. Offres box

| Offre | Débits max. (descendant / montant) | Prix la 1re année | Prix à partir du 13e mois | Engagement |
|---|---|---|---|---|
| Fibre Essentielle | 500 Mb/s / 500 Mb/s | 24,99 €/mois | 29,99 €/mois | 12 mois |
| Fibre Plus | 2 Gb/s / 900 Mb/s | 34,99 €/mois | 39,99 €/mois | 12 mois |
| Fibre Ultra | 8 Gb/s / 8 Gb/s | 49,99 €/mois | 54,99 €/mois | 12 mois |
| Box Cuivre (ADSL2+ / VDSL2) | 15 Mb/s / 1 Mb/s (ADSL2+) ; 50 Mb/s / 8 Mb/s (VDSL2) | 25,99 €/mois | 25,99 €/mois | aucun |

Frais de mise en service : 49 € pour toutes les offres box. Ces frais ne sont pas facturés lors du passage de la Box Cuivre à une offre fibre.

Appels inclus depuis la ligne fixe :

- toutes les offres : fixes de France métropolitaine et des DOM ;
- Fibre Plus et Fibre Ultra : en plus, mobiles de France métropolitaine et des DOM ;
- Fibre Ultra : en plus, fixes de 100 destinations internationales.

Les appels fixes illimités sont soumis aux mêmes limites d'usage raisonnable que les forfaits mobiles (250 correspondants différents par mois, appels coupés au bout de 3 heures).

## 7. Options TV

| Option | Prix mensuel |
|---|---|
| Pack Cinéma | 9,99 € (inclus dans Fibre Ultra) |
| Pack Sport | 14,99 € |
| Pack Jeunesse | 4,99 € |
| Multi-TV (par décodeur supplémentaire, 2 au maximum) | 5 € |
| Décodeur TV 4K avec la Box Cuivre | 5 € |

Les options TV sont sans engagement. Les vidéos à la demande sont facturées à l'acte, au prix affiché au moment de l'achat.

## 8. Équipements

| Équipement | Mode de mise à disposition | Prix | Montant facturé en cas de non-restitution |
|---|---|---|---|
| Box N6 | prêt, inclus dans Fibre Essentielle et Box Cuivre | inclus | 150 € |
| Box N6E | prêt, inclus dans Fibre Plus | inclus | 200 € |
| Box N7 | prêt, inclus dans Fibre Ultra | inclus | 250 € |
| Décodeur TV 4K | prêt, inclus dans Fibre Plus et Fibre Ultra | inclus ou 5 €/mois | 100 € |
| Répéteur N-Mesh | inclus dans Fibre Ultra, ou location | 3 €/mois en location | 50 € |
| Répéteur N-Mesh | vente | 79 € | sans objet |
| Routeur de poche Nébulis Go | vente | 59 € | sans objet |

Les équipements prêtés restent la propriété de Nébulis Télécom. Ils doivent être restitués dans les 30 jours qui suivent la fin du contrat.

## 9. Frais de service

| Prestation | Tarif |
|---|---|
| Activation d'une ligne mobile (SIM ou eSIM) | 10 € |
| Mise en service d'une offre box | 49 € |
| Résiliation d'une offre box | 59 € |
| Résiliation d'un forfait mobile | gratuit |
| Remplacement d'une carte SIM ou eSIM (perte, vol, changement de format) | 10 € |
| Remplacement d'une carte SIM défectueuse | gratuit |
| Changement de numéro mobile | 15 € |
| Changement d'offre | gratuit |
| Déménagement d'une offre box | gratuit |
| Facture papier | 1,50 €/mois |
| Paiement par chèque ou en espèces | 2 € par paiement |
| Rejet de prélèvement | 7,50 € |
| Rétablissement d'une ligne suspendue pour impayé | 15 € |
| Déplacement injustifié d'un technicien | 79 € |

Un déplacement est dit injustifié lorsque le client est absent au rendez-vous sans l'avoir annulé au moins 24 heures à l'avance, ou lorsque la panne provient de l'installation ou des équipements personnels du client.

## 10. Remises et avantages

### Avantage Duo

Les clients titulaires d'une offre Box Fibre bénéficient d'une remise de 5 € par mois sur chaque forfait Liberté 100 Go 5G ou Infini 250 Go 5G rattaché au même compte client, dans la limite de 4 lignes. La remise s'arrête automatiquement à la résiliation de l'offre box. Elle ne s'applique ni à la Box Cuivre, ni aux forfaits Essentiel 2 h et Liberté 30 Go.

### Indemnisations

- Interruption totale du service internet de la box pendant plus de 3 jours consécutifs, imputable à Nébulis : avoir égal à 1/30 du prix mensuel de l'offre par jour d'interruption, dès le premier jour.
- Absence du technicien à un rendez-vous confirmé, sans prévenir au moins 24 heures à l'avance : avoir de 20 €.

## 11. Engagement et résiliation

| Offre | Durée d'engagement | Somme due en cas de résiliation anticipée |
|---|---|---|
| Forfait mobile seul | aucune | aucune |
| Forfait mobile avec smartphone à prix réduit | 24 mois | pendant les 12 premiers mois : les mensualités restant à courir jusqu'au 12e mois, plus le quart des 12 mensualités suivantes ; à partir du 13e mois : le quart des mensualités restantes |
| Offres Box Fibre | 12 mois | les mensualités restant à courir jusqu'à la fin de l'engagement, plus les frais de résiliation de 59 € |
| Box Cuivre | aucune | frais de résiliation de 59 € |

La résiliation prend effet 10 jours après la réception de la demande, sauf si vous demandez une date plus tardive. Les motifs légitimes de résiliation sans frais sont détaillés dans les Conditions générales de vente.
""", typo=True, nbsp=True)


doc("doc-07", "Catalogue smartphones 2025", "appareils", """
# Catalogue smartphones 2025

Tous nos smartphones sont vendus neufs, débloqués tous opérateurs et garantis 2 ans. Vous pouvez les acheter seuls, ou à prix réduit avec un forfait Liberté 100 Go 5G ou Infini 250 Go 5G et un engagement de 24 mois.

## Les prix

| Modèle | Réseau | Prix sans forfait | Avec Liberté 100 Go 5G (24 mois) | Avec Infini 250 Go 5G (24 mois) |
|---|---|---|---|---|
| Vela Lite | 4G | 129 € | non proposé | non proposé |
| Kestrel K5 | 5G | 299 € | 149 € | 49 € |
| Orca 12 | 5G | 699 € | 449 € | 249 € |
| Orca 12 Pro | 5G | 1 099 € | 799 € | 549 € |
| Kestrel Fold | 5G | 1 499 € | non proposé | 1 149 € |

## Les modèles

### Vela Lite

Un smartphone simple et robuste : écran de 6,1 pouces, batterie de 4 000 mAh, 64 Go de stockage. Parfait avec le forfait Essentiel 2 h pour un premier téléphone. Il n'est pas compatible eSIM.

### Kestrel K5

Le meilleur rapport qualité-prix de notre gamme 5G : écran de 6,5 pouces à 120 Hz, 128 Go de stockage, batterie de 5 000 mAh et recharge rapide 33 W.

### Orca 12 et Orca 12 Pro

L'Orca 12 offre un appareil photo de 50 mégapixels et 256 Go de stockage. La version Pro ajoute un téléobjectif x5, un écran de 6,7 pouces et 512 Go de stockage. Les deux modèles sont compatibles Wi-Fi 7 et eSIM.

### Kestrel Fold

Notre smartphone pliable : écran intérieur de 7,8 pouces, 512 Go de stockage, double eSIM. Il est proposé à prix réduit uniquement avec le forfait Infini 250 Go 5G.

## Payer en plusieurs fois

Pour tout achat d'un montant compris entre 100 € et 1 500 €, vous pouvez régler votre téléphone en 4 fois sans frais par carte bancaire : un quart le jour de l'achat, puis trois mensualités égales. Ce paiement est proposé en ligne et en boutique, sous réserve d'acceptation.

## Reprise de votre ancien téléphone

Estimez la valeur de votre ancien mobile sur www.nebulis.example ou en boutique. Si l'estimation vous convient, déposez-le en boutique ou envoyez-le gratuitement avec l'étiquette prépayée : le montant vous est versé par virement sous 10 jours après vérification de l'appareil. Un téléphone qui ne s'allume plus est repris pour recyclage, sans valeur de rachat.

## Livraison, rétractation et garantie

- Livraison gratuite à domicile en 48 heures, ou retrait en boutique dès le lendemain.
- Pour un achat en ligne ou par téléphone, vous disposez de 14 jours à compter de la réception pour changer d'avis, à condition de renvoyer le téléphone complet dans son emballage d'origine.
- Tous les téléphones bénéficient de la garantie légale de conformité de 2 ans. En cas de panne, déposez votre téléphone dans une boutique Nébulis : un téléphone de prêt vous est proposé pendant la réparation.

## Bon à savoir

Le prix réduit du téléphone est lié à l'engagement de 24 mois de votre forfait. En cas de résiliation anticipée, une partie des mensualités restantes vous est facturée : les modalités sont détaillées dans la fiche « Engagements, frais et pénalités ».
""")


doc("doc-08", "Box N6, Box N6E et Box N7 : caractéristiques et installation", "appareils", """
# Box N6, Box N6E et Box N7 : caractéristiques et installation

Chaque offre box Nébulis est livrée avec un modem-routeur adapté à son débit. Les box sont prêtées pendant toute la durée de votre abonnement et restent la propriété de Nébulis Télécom.

## Caractéristiques techniques

| Caractéristique | Box N6 | Box N6E | Box N7 |
|---|---|---|---|
| Offres | Fibre Essentielle et Box Cuivre | Fibre Plus | Fibre Ultra |
| Norme Wi-Fi | Wi-Fi 6 | Wi-Fi 6E | Wi-Fi 7 |
| Bandes Wi-Fi | 2,4 et 5 GHz | 2,4, 5 et 6 GHz | 2,4, 5 et 6 GHz |
| Ports Ethernet | 4 ports 1 Gb/s | 1 port 2,5 Gb/s et 3 ports 1 Gb/s | 1 port 10 Gb/s et 4 ports 2,5 Gb/s |
| Prises téléphone | 1 | 2 | 2 |
| Ports USB | 1 port USB 2.0 | 1 port USB 3.0 | 2 ports USB 3.0 |
| Raccordement | fibre ou cuivre (ADSL/VDSL2), selon la version | fibre | fibre |
| Consommation moyenne | 8 W | 11 W | 14 W |

## Les voyants en façade

- Power : blanc fixe quand la box est allumée.
- Fibre (ou DSL sur la Box N6 version cuivre) : vert fixe quand la ligne est synchronisée.
- Internet : vert fixe quand la connexion est établie.
- Wi-Fi : bleu fixe quand le Wi-Fi est activé.
- Tél. : vert fixe quand la ligne téléphonique est active.

La signification des autres couleurs (rouge, orange, clignotements) est détaillée dans le manuel de dépannage.

## Premiers branchements

1. Reliez la box à la prise fibre murale (PTO) avec le câble fibre fourni, muni d'un connecteur vert. Retirez les capuchons de protection sans toucher l'extrémité du câble.
2. Branchez le bloc d'alimentation, puis appuyez sur le bouton marche.
3. Patientez : lors du premier démarrage, la box télécharge sa configuration et peut redémarrer seule. Comptez jusqu'à 10 minutes avant que le voyant Internet soit vert fixe.
4. Connectez vos appareils. Le nom du réseau Wi-Fi et la clé de sécurité sont inscrits sur l'étiquette collée sous la box.
5. Branchez votre téléphone fixe sur la prise Tél. 1 de la box.

## Interface de gestion

Depuis un appareil connecté à la box, rendez-vous sur http://192.168.50.1 ou dans l'appli Nébulis & Moi, rubrique Ma box. Le mot de passe administrateur figure lui aussi sous la box. Vous pouvez notamment :

- modifier le nom et la clé du réseau Wi-Fi ;
- activer un réseau Wi-Fi invité, isolé de vos appareils personnels ;
- programmer l'extinction du Wi-Fi la nuit ;
- configurer des redirections de ports ;
- consulter la liste des appareils connectés.

## Box N6E et Box N7 : la bande 6 GHz

La bande 6 GHz, réservée aux appareils compatibles Wi-Fi 6E ou Wi-Fi 7, est peu encombrée et offre les débits sans fil les plus élevés, mais elle traverse moins bien les murs. La Box N7 peut en outre, grâce au Wi-Fi 7, utiliser plusieurs bandes en même temps pour un même appareil compatible, ce qui améliore la stabilité de la connexion.

## Mode éco

La programmation horaire du Wi-Fi et la mise en veille des ports inutilisés réduisent la consommation de la box d'environ 30 %. Le mode éco s'active dans l'interface de gestion, rubrique Énergie.

## Réinitialisation

En dernier recours, la box peut être remise en configuration d'usine en maintenant le bouton Reset enfoncé pendant 10 secondes avec la pointe d'un stylo. Vos réglages personnalisés (nom du Wi-Fi, clé modifiée, redirections de ports) sont alors effacés.
""")


doc("doc-09", "Le décodeur TV 4K", "appareils", """
# Le décodeur TV 4K

Le décodeur TV 4K est fourni avec les offres Fibre Plus et Fibre Ultra ; il est disponible en option à 5 €/mois avec la Box Cuivre et pour chaque téléviseur supplémentaire (option Multi-TV).

## Ce qu'il permet

- Regarder les chaînes en direct en qualité jusqu'à 4K HDR, selon les programmes.
- Mettre en pause le direct et revenir jusqu'à 2 heures en arrière.
- Accéder au replay et aux enregistrements dans le cloud.
- Louer ou acheter des films et séries en vidéo à la demande.
- Utiliser les applications de l'écran d'accueil (musique, météo, jeux).

## Connectique

Un port HDMI 2.1 (câble fourni), un port Ethernet 1 Gb/s, un port USB et une sortie audio optique. Le décodeur se connecte à la box de préférence par câble Ethernet ; la connexion Wi-Fi est possible si le signal est bon.

## Installation

1. Reliez le décodeur au téléviseur avec le câble HDMI.
2. Reliez le décodeur à la box avec le câble Ethernet fourni (ou choisissez le Wi-Fi à l'étape 4).
3. Branchez l'alimentation : le voyant devient blanc.
4. Sélectionnez la bonne source HDMI sur votre téléviseur et suivez les instructions à l'écran.

## La télécommande

La télécommande Bluetooth fonctionne sans être pointée vers le décodeur. Elle est associée en usine ; si elle ne répond plus après un changement de piles, maintenez simultanément les touches OK et Retour pendant 5 secondes, à moins d'un mètre du décodeur, jusqu'à ce que son voyant clignote. La commande vocale s'active avec la touche micro.

## Voyant en façade

- Blanc : décodeur allumé.
- Rouge : décodeur en veille.
- Orange clignotant : mise à jour en cours, ne débranchez pas le décodeur.

## Consommation

En veille légère, le décodeur redémarre en 2 secondes et consomme 4 W. En veille profonde, activable dans Paramètres > Énergie, il consomme moins de 0,5 W mais met une trentaine de secondes à démarrer.
""", typo=True)


doc("doc-10", "Le répéteur Wi-Fi N-Mesh", "appareils", """
# Le répéteur Wi-Fi N-Mesh

Le répéteur N-Mesh étend la couverture Wi-Fi de votre box dans les pièces éloignées ou à l'étage. Il forme avec la box un réseau maillé unique : vos appareils passent d'un point d'accès à l'autre sans changer de nom de réseau.

## Comment l'obtenir ?

- Inclus avec la Fibre Ultra (un répéteur).
- En location à 3 €/mois, sans engagement, avec toutes les offres box.
- À l'achat pour 79 €.

Vous pouvez installer jusqu'à 3 répéteurs N-Mesh avec une même box.

## Installation en 3 étapes

1. Branchez le répéteur à mi-chemin entre la box et la zone mal couverte, et non dans la pièce où le Wi-Fi ne passe plus.
2. Appuyez 2 secondes sur le bouton WPS de la box, puis, dans les 2 minutes, sur le bouton WPS du répéteur.
3. Le voyant du répéteur passe au blanc fixe lorsque l'appairage est terminé. S'il reste orange, rapprochez-le de la box.

Le répéteur dispose d'un port Ethernet pour raccorder un décodeur TV ou une console de jeu.
""")


doc("doc-11", "Nébulis Go, le routeur 4G de poche", "appareils", """
# Nébulis Go, le routeur 4G de poche

Nébulis Go crée un point d'accès Wi-Fi partout où le réseau mobile 4G est disponible : en vacances, en déplacement ou dans une résidence sans box.

## Caractéristiques

- Connexion 4G jusqu'à 150 Mb/s en réception.
- Jusqu'à 10 appareils connectés en même temps.
- Batterie de 8 heures en utilisation, rechargeable en USB-C.
- Prix : 59 €.

## Quelle carte SIM utiliser ?

Nébulis Go fonctionne avec une carte SIM Nébulis. Le plus simple est de souscrire l'option Multi-SIM (3 €/mois, incluse dans Infini 250 Go 5G) : le routeur partage alors l'enveloppe internet de votre forfait mobile.

## Secours 4G en cas de panne de votre box

Si vous êtes abonné à la Fibre Plus ou à la Fibre Ultra et que votre accès internet est interrompu depuis plus de 48 heures à cause d'une panne que nous n'avons pas encore réparée, nous vous prêtons gratuitement un Nébulis Go avec une carte SIM de 100 Go. Il est à demander au 0 800 000 001 et à nous retourner dans les 15 jours qui suivent le rétablissement de votre ligne.
""", typo=True)


doc("doc-12", "Comprendre votre facture", "facturation", """
# Comprendre votre facture

Votre facture Nébulis regroupe, pour un même compte client, toutes vos lignes : box, forfaits mobiles et options. Voici comment la lire.

## Quand la facture est-elle émise ?

La facture est émise le 1er de chaque mois et mise à disposition dans Mon Nébulis au plus tard le 3. Vous recevez un e-mail dès qu'elle est disponible. Si vous payez par prélèvement, celui-ci intervient 10 jours après l'émission de la facture, soit aux alentours du 11 du mois. Pour les autres moyens de paiement, la date limite de paiement est indiquée en haut de la facture : elle est fixée au 15 du mois.

Vos factures des 24 derniers mois peuvent être consultées et téléchargées au format PDF dans Mon Nébulis, rubrique Factures.

## Les grandes parties de la facture

### 1. Le récapitulatif

En première page figurent le montant total à payer, la date et le mode de paiement, ainsi que votre numéro de compte client. Ce numéro vous est demandé lorsque vous contactez le service client.

### 2. Les abonnements et options

Les abonnements et options mensuels sont facturés d'avance, pour le mois qui commence. Par exemple, la facture émise le 1er avril comprend votre forfait pour la période du 1er au 30 avril.

### 3. Les consommations hors forfait

Les communications qui ne sont pas incluses dans votre offre sont facturées à terme échu, c'est-à-dire le mois suivant leur utilisation : appels au-delà du forfait, appels vers l'international, usage à l'étranger hors zone UE, numéros surtaxés, vidéos à la demande. Le détail de chaque communication est disponible dans Mon Nébulis.

### 4. Les remises et avoirs

Les remises (Avantage Duo, promotion de la première année) et les avoirs éventuels (geste commercial, indemnisation) apparaissent en négatif.

### 5. Les taxes

Les montants sont indiqués HT et TTC. La TVA est de 20 %.

## Pourquoi ma première facture est-elle plus élevée ?

La première facture comprend généralement :

- les frais d'activation (10 € par ligne mobile) ou de mise en service (49 € pour une box) ;
- l'abonnement au prorata des jours entre votre mise en service et la fin du mois ;
- l'abonnement du mois suivant, facturé d'avance.

À partir de la deuxième facture, le montant se stabilise, hors consommations hors forfait.

## Pourquoi ma facture a-t-elle augmenté ?

Les causes les plus fréquentes :

- la fin de la promotion de la première année sur votre offre fibre (par exemple, la Fibre Plus passe de 34,99 € à 39,99 € par mois à partir du 13e mois) ;
- une option ou un bouquet TV souscrit en cours de mois, facturé au prorata puis en totalité ;
- des communications hors forfait, notamment à l'étranger ;
- la fin de l'Avantage Duo après la résiliation de votre box.

## Un changement d'offre en cours de mois

Lorsque vous changez d'offre, l'ancienne offre est remboursée au prorata des jours non utilisés et la nouvelle est facturée au prorata des jours restants. Les deux lignes apparaissent sur votre prochaine facture.

## Une question sur votre facture ?

Vérifiez d'abord le détail des consommations dans Mon Nébulis. Si un montant vous semble erroné, contactez le service client au 0 800 000 000 ou par le formulaire de Mon Nébulis. Vous disposez d'un an à compter de la date d'émission de la facture pour la contester. La partie non contestée de la facture reste due à son échéance.

Les trop-perçus sont remboursés par virement dans un délai de 30 jours, ou déduits de la facture suivante si vous le préférez.
""", typo=True)


doc("doc-13", "Les moyens de paiement", "facturation", """
# Les moyens de paiement

Plusieurs moyens de paiement sont à votre disposition pour régler vos factures Nébulis. Vous pouvez en changer à tout moment dans Mon Nébulis, rubrique Paiement.

## Le prélèvement automatique SEPA

C'est le moyen de paiement par défaut, proposé lors de la souscription. Il vous suffit de fournir un RIB et de signer le mandat de prélèvement électronique. Le montant de la facture est prélevé 10 jours après son émission, aux alentours du 11 du mois. Aucun frais n'est facturé.

Pour changer de compte bancaire, saisissez votre nouveau RIB dans Mon Nébulis au moins 5 jours avant la date de prélèvement ; sinon, le changement s'appliquera à la facture suivante.

## La carte bancaire

Vous pouvez enregistrer une carte bancaire dans Mon Nébulis pour un paiement automatique chaque mois, ou payer une facture ponctuellement par carte, dans Mon Nébulis, dans l'appli Nébulis & Moi ou au serveur vocal du 0 800 000 000. Le paiement par carte est gratuit et pris en compte immédiatement.

## Le chèque

Libellez votre chèque à l'ordre de Nébulis Télécom et envoyez-le, accompagné du talon de paiement de votre facture, à : Nébulis Télécom – Service Paiements, TSA 00002, 99001 Portalban Cedex. Des frais de gestion de 2 € sont facturés pour chaque paiement par chèque. Prévoyez un délai postal d'au moins 5 jours pour respecter la date limite du 15 du mois.

## Les espèces en boutique

Vous pouvez régler votre facture en espèces dans nos boutiques, sur présentation de votre facture ou de votre numéro de compte client, dans la limite de 1 000 €. Des frais de gestion de 2 € s'appliquent également.

## Récapitulatif

| Moyen de paiement | Frais | Prise en compte |
|---|---|---|
| Prélèvement SEPA | gratuit | à la date de prélèvement |
| Carte bancaire | gratuit | immédiate |
| Chèque | 2 € par paiement | à réception et encaissement |
| Espèces en boutique | 2 € par paiement | immédiate |

Nous n'acceptons pas les virements spontanés : un virement sans référence ne peut pas être affecté à votre compte et risque d'entraîner des relances.
""")


doc("doc-14", "Retard ou incident de paiement", "facturation", """
# Retard ou incident de paiement

Un oubli ou un prélèvement rejeté peut arriver à tout le monde. Voici ce qui se passe si une facture reste impayée, et comment éviter la suspension de vos services.

## Rejet de prélèvement

Si votre banque rejette le prélèvement (provision insuffisante, compte clôturé, opposition), des frais de rejet de 7,50 € sont ajoutés à votre prochaine facture. Nous vous prévenons par SMS et par e-mail, et vous invitons à régler le montant par carte bancaire dans Mon Nébulis.

## Le calendrier en cas d'impayé

Les délais ci-dessous sont comptés à partir de la date d'échéance de la facture.

| Délai | Ce qui se passe |
|---|---|
| J+7 | Rappel par SMS et par e-mail. |
| J+15 | Lettre de relance et restriction des services : seuls les appels entrants, les numéros d'urgence et le service client restent accessibles. |
| J+30 | Suspension totale des lignes concernées, à l'exception des numéros d'urgence. |
| J+60 | Résiliation du contrat pour défaut de paiement et transmission du dossier au service de recouvrement. |

En cas de résiliation pour impayé, les mensualités restant dues au titre de l'engagement et les frais de résiliation sont exigibles, et les équipements doivent être restitués.

## Rétablir une ligne suspendue

Dès le paiement complet des sommes dues, votre ligne est rétablie : dans les 2 heures pour un paiement par carte bancaire, sous 48 heures pour les autres moyens de paiement. Des frais de rétablissement de 15 € sont facturés.

## Vous avez des difficultés pour payer ?

Contactez-nous avant l'échéance au 0 800 000 000. Selon votre situation, nous pouvons vous proposer un échéancier de paiement en 3 fois maximum, sans frais. Pendant la durée de l'échéancier, vos services ne sont pas restreints, à condition que chaque échéance soit réglée à la date prévue.

Vous pouvez aussi réduire votre facture en passant à une offre moins chère ou en supprimant des options : ces changements sont gratuits.
""")


doc("doc-15", "Nous contacter", "procedures", """
# Nous contacter

- Service client : 0 800 000 000, du lundi au samedi de 8 h à 21 h.
- Assistance technique : 0 800 000 001, 7 jours sur 7 de 8 h à 22 h.
- Perte ou vol de votre mobile : 0 800 000 003, 24 h/24.

Ces appels sont gratuits depuis une ligne fixe ou mobile en France.
""")


doc("doc-16", "Déménager avec votre box Nébulis", "procedures", """
# Déménager avec votre box Nébulis

Vous changez de logement ? Votre abonnement box vous suit. Le transfert est gratuit et ne relance pas votre engagement.

## Quand faire la démarche ?

Signalez votre déménagement au moins 15 jours avant la date prévue, idéalement un mois avant si votre nouveau logement doit être raccordé à la fibre. Plus la demande est faite tôt, plus vous avez de chances d'obtenir un rendez-vous de raccordement le jour de votre arrivée.

## Comment faire ?

1. Connectez-vous à Mon Nébulis, rubrique Ma ligne, puis choisissez « Je déménage ». Vous pouvez aussi appeler le 0 800 000 000.
2. Indiquez votre nouvelle adresse : nous vérifions immédiatement son éligibilité à la fibre et au cuivre.
3. Choisissez la date de mise en service dans votre nouveau logement et, si nécessaire, un créneau de rendez-vous avec un technicien.
4. Le jour du déménagement, débranchez votre box, votre décodeur et vos répéteurs, et emportez-les avec vos câbles : vous les réinstallerez dans votre nouveau logement.

Vous pouvez choisir de garder votre ancienne ligne active jusqu'à la mise en service de la nouvelle, pour ne jamais rester sans internet. L'ancienne ligne est alors fermée automatiquement le jour de l'activation de la nouvelle, et vous ne payez qu'un seul abonnement.

## Combien de temps faut-il ?

- Si le nouveau logement dispose déjà d'une prise fibre active : 3 à 7 jours.
- Si un raccordement par un technicien est nécessaire : 10 à 15 jours en moyenne.
- Pour la Box Cuivre : 7 jours ouvrés en moyenne.

## Combien ça coûte ?

Le déménagement est gratuit : aucun frais de mise en service n'est facturé et votre engagement n'est pas prolongé. Votre offre et son prix restent les mêmes.

## Votre numéro de téléphone fixe

Vous conservez votre numéro de fixe, quelle que soit votre nouvelle adresse en France métropolitaine. Il suffit de cocher l'option « Conserver mon numéro » lors de la déclaration du déménagement.

## Et si la fibre n'est pas disponible à ma nouvelle adresse ?

Nous vous proposons de passer à la Box Cuivre, sans frais de mise en service. Si vous préférez résilier, le déménagement dans un logement où Nébulis ne peut pas vous fournir un service équivalent est un motif légitime : la résiliation est alors sans frais, même pendant la période d'engagement, sur présentation d'un justificatif de domicile à la nouvelle adresse.

## Vous déménagez à l'étranger ?

Un départ à l'étranger est également un motif légitime de résiliation sans frais, sur présentation d'un justificatif (contrat de travail, bail ou attestation de résidence à l'étranger).

## Et mon forfait mobile ?

Il n'est pas concerné : pensez simplement à mettre à jour votre adresse de facturation dans Mon Nébulis, rubrique Mes informations.
""", typo=True)


doc("doc-17", "Résilier une offre Nébulis", "procedures", """
# Résilier une offre Nébulis

Nous regrettons de vous voir partir. Voici comment résilier votre box ou votre forfait mobile, et ce que cela vous coûtera.

## Vous partez chez un autre opérateur en gardant votre numéro ?

Ne résiliez pas vous-même ! Communiquez votre code RIO à votre nouvel opérateur : il se charge de la portabilité de votre numéro, et votre contrat Nébulis est résilié automatiquement le jour du transfert. Si vous résiliez avant, vous risquez de perdre votre numéro.

## Les trois façons de résilier

1. En ligne, dans Mon Nébulis, rubrique Mes contrats, puis « Résilier mon contrat ». La démarche prend quelques minutes et un accusé de réception vous est envoyé par e-mail.
2. Par courrier, de préférence en lettre recommandée avec accusé de réception, à : Nébulis Télécom – Service Résiliations, TSA 00001, 99001 Portalban Cedex. Indiquez votre numéro de compte client et la ligne concernée.
3. Par téléphone, au 0 800 000 000.

## Quand la résiliation prend-elle effet ?

La résiliation prend effet 10 jours après la réception de votre demande. Vous pouvez demander une date plus tardive, par exemple pour la faire coïncider avec un déménagement. Votre dernière facture est calculée au prorata des jours d'utilisation.

## Ce que coûte une résiliation

### Forfait mobile

- Forfait sans engagement : résiliation gratuite.
- Forfait avec smartphone à prix réduit (engagement de 24 mois) : si vous résiliez pendant les 12 premiers mois, les mensualités restant à courir jusqu'au 12e mois vous sont facturées, plus le quart des 12 mensualités suivantes ; à partir du 13e mois, seul le quart des mensualités restantes est dû.

### Box

- Frais de résiliation : 59 €, pour toutes les offres box.
- Offres fibre pendant l'engagement de 12 mois : les mensualités restant à courir jusqu'à la fin de l'engagement s'ajoutent aux frais de résiliation.

## Les motifs légitimes

Vous pouvez résilier sans frais, même pendant la période d'engagement, dans les situations suivantes :

- déménagement dans un logement où Nébulis ne peut pas fournir un service équivalent, ou départ à l'étranger ;
- licenciement, si vous êtes inscrit comme demandeur d'emploi ;
- dossier de surendettement déclaré recevable ;
- décès du titulaire ;
- maladie ou handicap rendant impossible l'utilisation du service.

Joignez un justificatif à votre demande. Dans ces cas, ni les mensualités restantes ni les frais de résiliation ne sont facturés.

## N'oubliez pas de rendre votre matériel

Box, décodeur et répéteur prêtés doivent nous être restitués dans les 30 jours suivant la résiliation. Une étiquette de retour prépayée vous est envoyée par e-mail. À défaut, les équipements non restitués vous sont facturés.
""")


doc("doc-18", "Portabilité du numéro et code RIO", "procedures", """
# Portabilité du numéro et code RIO

La portabilité vous permet de changer d'opérateur en conservant votre numéro de mobile ou de fixe. Elle est gratuite et se fait sans démarche auprès de l'ancien opérateur : c'est le nouvel opérateur qui s'en charge.

## Qu'est-ce que le code RIO ?

Le RIO (relevé d'identité opérateur) est un code unique de 12 caractères, composé de chiffres et de lettres, associé à votre ligne et à son titulaire. Il est indispensable pour demander la portabilité.

## Obtenir votre RIO Nébulis

- Appelez le 0 800 000 179 depuis la ligne concernée (mobile ou fixe de votre box). Ce serveur vocal est gratuit et disponible 24 h/24. Votre RIO vous est donné oralement et confirmé par SMS pour une ligne mobile.
- Ou consultez Mon Nébulis, rubrique Ma ligne, puis « Mon code RIO ».

Le serveur vocal vous indique aussi la date de fin de votre éventuel engagement.

## Vous arrivez chez Nébulis

1. Obtenez votre RIO auprès de votre opérateur actuel.
2. Communiquez-le lors de la souscription, avec votre numéro.
3. Choisissez la date de portage. Le portage a lieu au plus tôt 3 jours ouvrables après la souscription ou, pour un mobile, après l'activation de votre nouvelle carte SIM.
4. Le jour du portage, votre ligne peut être coupée pendant 4 heures au maximum. Vous recevez un SMS lorsque le transfert est terminé.

Votre ancien contrat est résilié automatiquement le jour du portage. Les frais éventuels liés à votre ancien engagement restent dus à votre ancien opérateur.

## Vous quittez Nébulis

Donnez votre RIO Nébulis à votre nouvel opérateur, sans résilier votre ligne. Votre contrat Nébulis prend fin automatiquement le jour du portage ; la dernière facture est établie au prorata. Si vous êtes encore engagé, les sommes prévues pour une résiliation anticipée vous sont facturées, de même que les frais de résiliation de 59 € pour une box. N'oubliez pas de restituer vos équipements.

## Conditions

- Seul le titulaire de la ligne peut demander la portabilité.
- La ligne doit être active au moment de la demande : un numéro déjà résilié ne peut plus être transféré.
- Pour un numéro fixe, le code RIO doit être obtenu en appelant le serveur vocal depuis la ligne fixe elle-même, ou dans Mon Nébulis.
""", typo=True)


doc("doc-19", "Remplacer votre carte SIM ou votre eSIM", "procedures", """
# Remplacer votre carte SIM ou votre eSIM

Perte, vol, carte abîmée ou nouveau téléphone qui n'accepte pas le même format : voici comment obtenir une nouvelle carte SIM en conservant votre numéro et votre forfait.

## Votre téléphone a été perdu ou volé

1. Suspendez immédiatement votre ligne pour éviter toute utilisation frauduleuse : dans Mon Nébulis, rubrique Ma ligne, « Suspendre ma ligne », ou au 0 800 000 003, joignable 24 h/24 et 7 j/7.
2. En cas de vol, déposez plainte auprès de la police ou de la gendarmerie. Le récépissé vous sera demandé si vous avez souscrit l'Assurance Sérénité Mobile.
3. Commandez une nouvelle carte SIM (voir ci-dessous). Votre ligne sera réactivée sur la nouvelle carte.

La suspension est gratuite. Votre forfait continue d'être facturé pendant la suspension.

## Commander une nouvelle carte SIM

| Où ? | Délai | Conditions |
|---|---|---|
| En boutique | immédiat | sur présentation d'une pièce d'identité |
| Dans Mon Nébulis ou au 0 800 000 000 | 2 à 3 jours ouvrés, par lettre suivie | livraison à l'adresse de facturation |
| eSIM dans l'appli Nébulis & Moi | immédiat | après vérification de votre identité dans l'appli |

La nouvelle carte SIM coûte 10 €, facturés sur votre prochaine facture. Elle est gratuite si votre carte est défectueuse.

## Activer votre nouvelle carte

Insérez la carte dans votre téléphone, puis activez-la dans Mon Nébulis, rubrique Ma ligne, « Activer ma nouvelle SIM ». L'activation prend en général moins de 2 heures. Votre ancienne carte cesse alors définitivement de fonctionner.

Attention : les contacts enregistrés sur l'ancienne carte SIM ne sont pas récupérables. Pensez à sauvegarder vos contacts sur votre téléphone ou dans le cloud.

## Passer à l'eSIM

Si votre téléphone est compatible, vous pouvez remplacer votre carte physique par une eSIM dans l'appli Nébulis & Moi. Le QR code d'installation vous est envoyé par e-mail. Ce changement coûte 10 €, comme un remplacement de carte.

## Vous avez retrouvé votre téléphone ?

Si vous n'avez pas encore commandé de nouvelle carte, levez la suspension dans Mon Nébulis ou au 0 800 000 000 : la réactivation est gratuite et immédiate.
""")


doc("doc-20", "Réclamations et médiation", "procedures", """
# Réclamations et médiation

Un problème avec votre facture, un service qui ne fonctionne pas comme prévu, une intervention qui s'est mal passée ? Nous voulons vous apporter une réponse rapide. Notre traitement des réclamations comprend trois niveaux.

## Niveau 1 : le service client

Contactez le service client par téléphone au 0 800 000 000, par le formulaire de réclamation de Mon Nébulis, par le chat de l'appli Nébulis & Moi ou en boutique. Un numéro de dossier vous est attribué. Nous nous engageons à vous répondre dans un délai de 10 jours ouvrés.

## Niveau 2 : le Service Consommateurs

Si la réponse du service client ne vous satisfait pas, ou si vous n'avez pas eu de réponse dans les 10 jours ouvrés, adressez une réclamation écrite au Service Consommateurs, en rappelant votre numéro de dossier :

- par le formulaire « Service Consommateurs » de Mon Nébulis ;
- ou par courrier à : Nébulis Télécom – Service Consommateurs, TSA 00000, 99001 Portalban Cedex.

Le Service Consommateurs vous répond par écrit dans un délai de 30 jours.

## Niveau 3 : le Médiateur

Si vous n'avez pas obtenu de réponse écrite du Service Consommateurs dans un délai d'un mois, ou si sa réponse ne vous convient pas, vous pouvez saisir gratuitement le Médiateur des services télécoms, organisme indépendant. La saisine doit intervenir dans un délai d'un an à compter de votre réclamation écrite, en ligne sur www.mediateur-telecoms.example ou par courrier (BP 00000, 99002 Portalban Cedex). Le Médiateur rend son avis dans les 90 jours qui suivent la réception du dossier complet. Vous êtes libre de l'accepter ou non.

## Les indemnisations prévues

- Votre connexion internet par la box est totalement interrompue plus de 3 jours consécutifs par notre faute : un avoir égal à 1/30 de votre abonnement mensuel vous est accordé pour chaque jour d'interruption, dès le premier jour.
- Un technicien ne vient pas à un rendez-vous confirmé sans vous avoir prévenu au moins 24 heures avant : un avoir de 20 € est crédité sur votre compte.

Ces avoirs sont appliqués automatiquement sur votre prochaine facture. S'ils n'apparaissent pas, signalez-le au service client.

## Conseils pour une réclamation efficace

- Indiquez votre numéro de compte client et la ligne concernée.
- Décrivez le problème avec les dates et, si possible, des captures d'écran ou des photos.
- Conservez une copie de vos courriers et les numéros de dossier.
""", typo=True)


doc("doc-21", "Manuel de dépannage : internet, téléphone fixe et télévision", "depannage", """
# Manuel de dépannage : internet, téléphone fixe et télévision

Ce manuel rassemble les solutions aux problèmes les plus courants rencontrés avec les box Nébulis (Box N6, Box N6E et Box N7) et le décodeur TV 4K. Dans la grande majorité des cas, quelques vérifications simples suffisent à rétablir le service sans attendre l'intervention d'un technicien. Suivez les étapes dans l'ordre : elles vont de la plus simple à la plus complète.

## 1. Avant de commencer

### Vérifiez s'il y a un incident dans votre secteur

Ouvrez l'appli Nébulis & Moi, rubrique Assistance, puis « Carte des incidents », ou consultez la même rubrique dans Mon Nébulis. Si un incident est en cours à votre adresse, inutile de poursuivre : nos équipes sont déjà mobilisées. Le délai de rétablissement estimé est affiché et vous recevez un SMS dès que le service est rétabli.

### Lancez le test de ligne à distance

Dans Mon Nébulis, rubrique Assistance, choisissez « Tester ma ligne ». Le test dure environ 2 minutes et fonctionne même depuis votre mobile, sans connexion à la box. Il vérifie l'état de la ligne jusqu'à votre logement, la synchronisation de la box et votre authentification sur notre réseau, puis vous propose la solution adaptée.

### Notez l'état des voyants

La couleur des voyants de la box est l'information la plus utile pour établir un diagnostic. Notez-la avant de redémarrer quoi que ce soit : si vous devez appeler l'assistance, le conseiller vous la demandera.

## 2. Comprendre les voyants de la box

| Voyant | État | Signification | Que faire ? |
|---|---|---|---|
| Power | blanc fixe | La box est allumée. | Rien. |
| Power | éteint | La box n'est pas alimentée. | Vérifiez le bloc d'alimentation, la prise électrique et le bouton marche. |
| Fibre | vert fixe | Le signal optique est reçu et la ligne est synchronisée. | Rien. |
| Fibre | vert clignotant | Synchronisation en cours. | Patientez jusqu'à 5 minutes. |
| Fibre | rouge | Aucun signal optique n'est reçu. | Vérifiez le câble fibre (partie 3.1). |
| DSL (Box Cuivre) | rouge ou clignotant plus de 5 minutes | La ligne cuivre n'est pas synchronisée. | Vérifiez le câble et la prise téléphonique (partie 3.2). |
| Internet | vert fixe | La connexion à internet est établie. | Rien. |
| Internet | orange | La box est synchronisée mais n'est pas authentifiée sur le réseau Nébulis. | Redémarrez la box ; si le voyant reste orange, contactez l'assistance. |
| Wi-Fi | bleu fixe | Le Wi-Fi est activé. | Rien. |
| Wi-Fi | éteint | Le Wi-Fi est désactivé ou en pause programmée. | Appuyez 3 secondes sur le bouton Wi-Fi de la box. |
| Tél. | vert fixe | La ligne téléphonique est active. | Rien. |
| Tél. | éteint | Le service de téléphonie n'est pas disponible. | Voir la partie 6. |

Un voyant qui clignote en blanc sur toute la façade signifie que la box installe une mise à jour : ne la débranchez pas, l'opération dure moins de 10 minutes.

## 3. Plus d'internet du tout

### 3.1 Avec une offre fibre

1. Redémarrez la box : débranchez son alimentation pendant 30 secondes, rebranchez-la et attendez 5 minutes. Ce simple geste résout une grande partie des problèmes.
2. Si le voyant Fibre est rouge, vérifiez le câble fibre. Ses deux extrémités doivent être enclenchées jusqu'au clic, l'une dans la prise terminale optique (PTO), l'autre dans le port Fibre de la box. Le câble ne doit être ni pincé (par une porte, un meuble), ni plié à angle vif : la fibre est un fil de verre qui se casse si on la courbe trop fortement. Ne regardez jamais l'extrémité d'un câble fibre ou l'intérieur de la prise : le laser utilisé est invisible mais peut abîmer les yeux.
3. Si le câble est endommagé, nous vous envoyons gratuitement un câble de remplacement sous 3 jours ouvrés. Demandez-le au 0 800 000 001 ou dans Mon Nébulis.
4. Si le voyant Fibre clignote en vert pendant plus de 10 minutes, la box n'arrive pas à se synchroniser : redémarrez-la une seconde fois puis lancez le test de ligne.
5. Si le voyant Internet reste orange après deux redémarrages, vérifiez dans Mon Nébulis que votre ligne n'est pas suspendue, par exemple à la suite d'une facture impayée. Si ce n'est pas le cas, contactez l'assistance.
6. En dernier recours, réinitialisez la box en maintenant le bouton Reset enfoncé pendant 10 secondes. Vos réglages personnalisés (nom et clé Wi-Fi modifiés, redirections de ports) seront effacés, et le Wi-Fi reprendra le nom et la clé inscrits sous la box.

### 3.2 Avec la Box Cuivre

1. Redémarrez la box comme indiqué ci-dessus.
2. Vérifiez que le câble est bien branché entre le port DSL de la box et la prise téléphonique murale. Privilégiez la prise principale du logement, généralement la plus proche de l'arrivée de la ligne.
3. Débranchez les autres appareils branchés sur les prises téléphoniques (anciens téléphones, alarme, fax) et retirez les rallonges : une rallonge téléphonique de plus de 5 mètres dégrade nettement le signal.
4. Si d'autres prises téléphoniques sont utilisées, chacune doit être équipée d'un filtre ADSL.
5. Par temps d'orage, débranchez la box de la prise téléphonique et de la prise électrique : la foudre est une cause fréquente de pannes sur les lignes cuivre.

## 4. Connexion lente ou instable

### 4.1 Mesurer le débit correctement

Un test de débit réalisé en Wi-Fi mesure surtout la qualité de votre Wi-Fi, pas celle de votre ligne. Pour connaître le débit réel de votre connexion :

- reliez un ordinateur à la box avec un câble Ethernet ;
- fermez les autres applications et déconnectez les autres appareils si possible ;
- lancez le test sur test.nebulis.example, puis renouvelez-le à différents moments de la journée.

En Ethernet, le débit mesuré dépend aussi du port utilisé et de la carte réseau de l'ordinateur. Un port 1 Gb/s plafonne en pratique autour de 940 Mb/s : pour dépasser ce débit avec la Fibre Plus, utilisez le port 2,5 Gb/s de la Box N6E ; avec la Fibre Ultra, le port 10 Gb/s de la Box N7. Avec la Box Cuivre, le débit dépend surtout de la distance entre votre logement et le central ; le débit maximal de votre ligne est indiqué dans Mon Nébulis, rubrique Ma ligne.

### 4.2 Si le débit en Ethernet est anormalement bas

1. Redémarrez la box.
2. Changez de câble Ethernet : un câble ancien (catégorie 5) ou abîmé peut limiter le débit à 100 Mb/s.
3. Vérifiez que la box n'est pas enfermée dans un meuble ou posée sur un appareil qui chauffe : une box qui surchauffe réduit ses performances.
4. Lancez le test de ligne à distance, puis contactez l'assistance si le débit reste faible.

### 4.3 Si la connexion se coupe régulièrement

- Si les coupures ont lieu toujours à la même heure, vérifiez que la programmation horaire du Wi-Fi ou le mode éco n'est pas activé dans l'interface de gestion de la box.
- Consultez le journal des événements dans l'interface de gestion (http://192.168.50.1, rubrique Diagnostic) : il indique les pertes de synchronisation et leur heure.
- Avec la Box Cuivre, des coupures fréquentes sont souvent dues à une prise ou à une rallonge défectueuse : reprenez les étapes de la partie 3.2.

## 5. Problèmes de Wi-Fi

Les problèmes de Wi-Fi lent sont traités en détail dans la fiche « Wi-Fi lent ou instable ». Voici l'essentiel.

- Placez la box en hauteur, au centre du logement, hors d'un meuble fermé et loin des gros appareils électroménagers.
- Les murs porteurs, les dalles en béton, les miroirs et les aquariums affaiblissent fortement le signal.
- Sur les grandes surfaces ou sur plusieurs étages, installez un répéteur N-Mesh.

### Vous ne trouvez plus la clé Wi-Fi

La clé d'origine est inscrite sur l'étiquette collée sous la box. Si vous l'avez modifiée et oubliée, consultez-la dans l'appli Nébulis & Moi, rubrique Ma box, ou dans l'interface de gestion.

### Un appareil ancien ne parvient pas à se connecter

Les box Nébulis utilisent par défaut la sécurité WPA3, que certains appareils anciens ne reconnaissent pas. Activez le mode de compatibilité WPA2/WPA3 dans l'interface de gestion, rubrique Wi-Fi, puis reconnectez l'appareil.

## 6. Téléphone fixe

### Pas de tonalité

1. Vérifiez que le téléphone est branché sur la prise Tél. 1 de la box, et non sur la prise téléphonique murale : avec la fibre, la prise murale ne fonctionne plus.
2. Si votre téléphone est un modèle sans fil, vérifiez que sa base est alimentée.
3. Si le voyant Tél. de la box est éteint alors que le voyant Internet est vert, redémarrez la box. Si le problème persiste, contactez l'assistance.

### Grésillements ou voix hachée

Éloignez la base du téléphone sans fil de la box d'au moins un mètre et remplacez le câble téléphonique. Des grésillements peuvent aussi apparaître quand la connexion est saturée par des téléchargements importants.

### Pendant une panne internet

Votre téléphone fixe passe par la box : il ne fonctionne pas lorsque la connexion est coupée. Pour rester joignable, renvoyez gratuitement les appels de votre fixe vers votre mobile depuis Mon Nébulis, rubrique Téléphone, puis « Renvoi d'appel ».

## 7. Télévision

### 7.1 Écran noir ou message « Aucun signal »

1. Vérifiez que le téléviseur est réglé sur la source HDMI à laquelle le décodeur est branché.
2. Vérifiez que le câble HDMI est bien enfoncé aux deux extrémités ; essayez un autre port HDMI du téléviseur.
3. Regardez le voyant du décodeur : s'il est rouge, le décodeur est en veille, appuyez sur la touche marche de la télécommande. S'il clignote en orange, une mise à jour est en cours : patientez sans débrancher.

### 7.2 Les codes d'erreur

| Code | Signification | Que faire ? |
|---|---|---|
| TV-01 | Le décodeur ne communique pas avec la box. | Vérifiez le câble Ethernet ou la connexion Wi-Fi du décodeur, puis redémarrez la box et ensuite le décodeur. |
| TV-02 | Les droits de la chaîne n'ont pas été reçus : la chaîne ne fait pas partie de votre offre ou le bouquet n'est pas encore activé. | Après une souscription, patientez 15 minutes, puis redémarrez le décodeur. Vérifiez ensuite vos options TV dans Mon Nébulis. |
| TV-03 | Le débit est insuffisant pour la qualité demandée. | Reliez le décodeur à la box par câble Ethernet. Avec la Box Cuivre, un débit stable d'au moins 8 Mb/s est nécessaire. |
| TV-04 | La mise à jour du décodeur a échoué. | Redémarrez le décodeur et laissez la mise à jour se terminer (voyant orange clignotant). |

### 7.3 L'image se fige ou se pixelise

Les coupures d'image viennent presque toujours de la connexion entre la box et le décodeur. Privilégiez le câble Ethernet ; si le décodeur est loin de la box, branchez-le sur le port Ethernet d'un répéteur N-Mesh. Avec la Box Cuivre, évitez les téléchargements importants pendant que vous regardez la télévision.

### 7.4 La télécommande ne répond plus

1. Remplacez les piles.
2. Associez de nouveau la télécommande : à moins d'un mètre du décodeur, maintenez simultanément les touches OK et Retour pendant 5 secondes, jusqu'à ce que son voyant clignote.
3. En attendant, vous pouvez piloter le décodeur depuis l'appli Nébulis & Moi, rubrique Télécommande.

### 7.5 Réinitialiser le décodeur

Dans Paramètres > Système > Réinitialisation, choisissez « Restaurer les paramètres d'usine ». Si le menu n'est pas accessible, maintenez le bouton situé à l'arrière du décodeur enfoncé pendant 15 secondes. Vos enregistrements, stockés dans le cloud, ne sont pas perdus ; en revanche, vos réglages (langue, favoris, code parental modifié) sont effacés.

### 7.6 Pas de son

Vérifiez que le son n'est coupé ni sur le téléviseur ni sur le décodeur. Si vous utilisez une barre de son ou un amplificateur, réglez la sortie audio du décodeur sur « Stéréo » dans Paramètres > Son, puis testez de nouveau.

## 8. Faire appel à l'assistance et à un technicien

L'assistance technique est joignable au 0 800 000 001, 7 jours sur 7 de 8 h à 22 h. Munissez-vous de votre numéro de compte client et de l'état des voyants. Le conseiller réalise des tests à distance et, si nécessaire, organise l'intervention d'un technicien ; un rendez-vous est généralement proposé dans les 2 à 5 jours.

### Qui paie l'intervention ?

- L'intervention est gratuite lorsque la panne provient du réseau Nébulis ou d'un équipement prêté par Nébulis.
- Des frais de déplacement de 79 € sont facturés si le déplacement est injustifié : vous étiez absent au rendez-vous sans l'avoir annulé au moins 24 heures à l'avance, ou la panne provient de votre installation ou de vos équipements personnels (câblage intérieur, téléphone, ordinateur).
- Si le technicien ne se présente pas à un rendez-vous confirmé sans vous avoir prévenu au moins 24 heures à l'avance, un avoir de 20 € est crédité sur votre compte.

### Secours 4G

Les abonnés Fibre Plus et Fibre Ultra dont l'accès à internet est interrompu depuis plus de 48 heures, à cause d'une panne non encore réparée, peuvent demander le prêt gratuit d'un routeur Nébulis Go avec une carte SIM de 100 Go. Il doit être retourné dans les 15 jours suivant le rétablissement de la ligne.

### Indemnisation

Si votre accès à internet est totalement interrompu pendant plus de 3 jours consécutifs du fait de Nébulis, vous recevez un avoir égal à 1/30 de votre abonnement mensuel par jour d'interruption, dès le premier jour.

## 9. Aide-mémoire

| Symptôme | Premier réflexe |
|---|---|
| Plus d'internet | Carte des incidents, puis redémarrage de la box (30 secondes hors tension) |
| Voyant Fibre rouge | Vérifier le câble fibre aux deux extrémités |
| Voyant Internet orange | Redémarrer, puis vérifier que la ligne n'est pas suspendue |
| Internet lent | Mesurer le débit en Ethernet sur test.nebulis.example |
| Wi-Fi faible dans une pièce | Déplacer la box ou installer un répéteur N-Mesh |
| Pas de tonalité | Téléphone branché sur la prise Tél. 1 de la box |
| Écran noir | Vérifier la source HDMI du téléviseur |
| Code TV-02 | Attendre 15 minutes puis redémarrer le décodeur |
| Télécommande inactive | Piles, puis touches OK et Retour pendant 5 secondes |
""", typo=True)


doc("doc-22", "Wi-Fi lent ou instable", "depannage", """
# Wi-Fi lent ou instable

Vos vidéos mettent du temps à charger dans la chambre, la visioconférence décroche dans le bureau ? Le plus souvent, ce n'est pas votre ligne qui est en cause, mais la propagation du Wi-Fi dans le logement. Voici comment l'améliorer.

## Commencez par un test près de la box

Placez-vous à 2 mètres de la box, dans la même pièce, et faites un test de débit sur test.nebulis.example. Si le débit est bon près de la box mais faible ailleurs, le problème vient de la couverture Wi-Fi. S'il est faible partout, y compris en Ethernet, reportez-vous au manuel de dépannage, partie « Connexion lente ou instable ».

## Les trois bandes Wi-Fi

| Bande | Débit réel typique | Portée | Points d'attention |
|---|---|---|---|
| 2,4 GHz | 50 à 150 Mb/s | la meilleure, traverse bien les murs | souvent encombrée par les réseaux voisins, perturbée par les fours à micro-ondes et le Bluetooth |
| 5 GHz | 300 à 900 Mb/s à proximité de la box | moyenne, traverse moins bien les murs | le meilleur compromis dans la plupart des logements |
| 6 GHz (Box N6E et Box N7) | plus de 1 Gb/s à courte distance | la plus courte | très peu encombrée, réservée aux appareils compatibles Wi-Fi 6E ou Wi-Fi 7 |

Par défaut, votre box diffuse un seul nom de réseau pour toutes les bandes et oriente automatiquement chaque appareil vers la bande la plus adaptée. Si vous préférez choisir vous-même, vous pouvez séparer les bandes dans l'interface de gestion, rubrique Wi-Fi.

## Sept gestes pour un meilleur Wi-Fi

1. Placez la box en hauteur et le plus au centre possible du logement, jamais dans un meuble fermé, derrière le téléviseur ou au sol.
2. Éloignez-la des obstacles qui bloquent les ondes : murs porteurs, dalles en béton, miroirs, aquariums, réfrigérateur.
3. Redémarrez la box et l'appareil concerné.
4. Lancez l'optimisation du Wi-Fi dans l'appli Nébulis & Moi (Ma box > Optimiser le Wi-Fi) : la box choisit alors les canaux les moins encombrés par les réseaux de vos voisins.
5. Mettez à jour votre appareil. Un appareil ancien, compatible seulement Wi-Fi 4, ne dépassera pas quelques dizaines de Mb/s, même à côté de la box.
6. Limitez les usages simultanés : plusieurs vidéos en 4K, des sauvegardes dans le cloud et des téléchargements de jeux se partagent le même Wi-Fi.
7. Pour les appareils fixes gourmands (téléviseur, console, ordinateur de bureau), préférez un câble Ethernet.

## Étendre la couverture avec un répéteur N-Mesh

Dans un logement de plus de 100 m², sur plusieurs étages ou avec des murs épais, un répéteur N-Mesh est souvent indispensable. Il est inclus avec la Fibre Ultra, disponible en location pour 3 €/mois sans engagement avec les autres offres, ou à l'achat pour 79 €. Jusqu'à 3 répéteurs peuvent être associés à une même box.

Placez le répéteur à mi-chemin entre la box et la zone mal couverte : installé dans une pièce où le signal est déjà très faible, il ne peut relayer qu'un signal faible.

## Le Wi-Fi se coupe la nuit ?

Vérifiez si la programmation horaire du Wi-Fi ou le mode éco est activé dans l'interface de gestion de la box. Ces fonctions éteignent le Wi-Fi aux heures choisies pour réduire la consommation d'énergie.

## Toujours lent ?

Contactez l'assistance technique au 0 800 000 001, 7 jours sur 7 de 8 h à 22 h. Le conseiller peut analyser à distance l'environnement Wi-Fi de votre box.
""")


doc("doc-23", "Votre messagerie vocale", "depannage", """
# Votre messagerie vocale

La messagerie vocale est incluse gratuitement dans tous les forfaits mobiles Nébulis. Elle prend vos messages lorsque vous ne répondez pas, que votre téléphone est éteint ou hors réseau.

## Consulter vos messages

- Depuis votre mobile Nébulis : appelez le 0 800 000 555 ou maintenez la touche 1 de votre clavier. L'appel est gratuit.
- Depuis un autre téléphone, en France ou à l'étranger : appelez le +33 1 00 00 05 55, puis tapez votre numéro de mobile et votre code secret.
- Dans l'appli Nébulis & Moi, avec la messagerie vocale visuelle : vous voyez la liste de vos messages, les écoutez dans l'ordre de votre choix et les supprimez en un geste.

Depuis la zone UE, la consultation est décomptée de votre forfait comme un appel vers la France. Depuis les autres pays, elle est facturée au tarif d'un appel émis dans le pays où vous vous trouvez.

## Le code secret

À la première connexion, la messagerie vous demande de remplacer le code provisoire 0000 par un code personnel de 4 chiffres. Ce code est exigé pour consulter vos messages depuis un autre téléphone.

Vous avez oublié votre code ? Réinitialisez-le dans Mon Nébulis, rubrique Ma ligne, puis Messagerie vocale, « Réinitialiser le code ». Un code provisoire vous est envoyé par SMS ; vous devrez le changer lors de votre prochaine consultation.

## Personnaliser votre messagerie

- Annonce d'accueil : enregistrez votre propre message depuis le menu de la messagerie (touche 3).
- Délai avant le déclenchement de la messagerie : 20 secondes par défaut, réglable de 5 à 30 secondes dans Mon Nébulis.
- Notification : un SMS vous prévient de chaque nouveau message.

## Capacité et conservation

La messagerie peut contenir jusqu'à 40 messages d'une durée maximale de 3 minutes chacun. Les messages, lus ou non, sont conservés 30 jours puis supprimés automatiquement. Lorsque la messagerie est pleine, vos correspondants ne peuvent plus vous laisser de message.

## Problèmes fréquents

- Vous n'êtes pas averti des nouveaux messages : vérifiez que les SMS de la messagerie ne sont pas bloqués par une application de filtrage.
- La messagerie ne se déclenche pas : le renvoi vers la messagerie a peut-être été désactivé. Réactivez-le dans Mon Nébulis, rubrique Messagerie vocale.
- La messagerie visuelle ne s'affiche pas : elle nécessite une connexion internet mobile ou Wi-Fi et la dernière version de l'appli Nébulis & Moi.

Vous ne souhaitez pas de messagerie ? Vous pouvez la désactiver gratuitement dans Mon Nébulis ; vos correspondants entendront alors la sonnerie jusqu'à la fin de l'appel.
""", typo=True)


doc("doc-24", "Mobile : pas de réseau ou pas d'internet", "depannage", """
# Mobile : pas de réseau ou pas d'internet

Votre téléphone affiche « Aucun service », « Appels d'urgence uniquement » ou ne se connecte pas à internet ? Suivez ces étapes dans l'ordre.

## Pas de réseau du tout

1. Désactivez puis réactivez le mode avion, ou redémarrez votre téléphone.
2. Vérifiez la couverture à votre adresse sur la carte de couverture de www.nebulis.example et la carte des incidents de l'appli Nébulis & Moi.
3. Vérifiez que votre ligne n'est pas suspendue (perte, vol ou impayé) dans Mon Nébulis.
4. Retirez la carte SIM, vérifiez qu'elle n'est pas abîmée, puis remettez-la correctement en place.
5. Testez votre carte SIM dans un autre téléphone. Si elle ne fonctionne pas non plus, elle est probablement défectueuse : son remplacement est alors gratuit.

Si votre téléphone demande un code PIN ou PUK, consultez la fiche « Codes PIN et PUK ».

## Le réseau fonctionne mais pas internet

1. Vérifiez que les données mobiles sont activées dans les réglages du téléphone.
2. Vérifiez dans l'appli Nébulis & Moi que votre enveloppe internet n'est pas épuisée : au-delà, le débit est réduit à 128 kb/s, ce qui rend la navigation très lente.
3. Vérifiez le point d'accès (APN). Il se configure normalement tout seul ; si ce n'est pas le cas, créez un APN avec le nom « Nébulis » et le point d'accès web.nebulis, sans nom d'utilisateur ni mot de passe.
4. Réinitialisez les paramètres réseau du téléphone (vos données personnelles sont conservées, mais les réseaux Wi-Fi enregistrés sont oubliés).

## Pas de 5G ?

Trois conditions doivent être réunies : un forfait Liberté 100 Go 5G ou Infini 250 Go 5G, un téléphone compatible 5G avec l'option 5G activée dans ses réglages, et une zone couverte en 5G. Si l'une manque, le téléphone utilise la 4G, sans interruption de service.

## À l'étranger

Activez l'itinérance des données dans les réglages de votre téléphone : elle est désactivée par défaut sur la plupart des appareils. Vérifiez aussi que vous n'avez pas atteint le plafond de sécurité de 60 € TTC de consommation internet hors Pass Voyage dans les zones 2 et 3.

## Mauvaise réception à l'intérieur

Activez les appels Wi-Fi dans les réglages de votre téléphone : vos appels et SMS passeront par votre connexion Wi-Fi, sans surcoût, là où le réseau mobile est faible. Cette fonction est gratuite avec tous les forfaits Nébulis, sur les téléphones compatibles.

## Toujours rien ?

Contactez l'assistance technique au 0 800 000 001, 7 jours sur 7 de 8 h à 22 h, ou présentez-vous en boutique avec votre téléphone et votre carte SIM.
""")


doc("doc-25", "Voyager à l'étranger avec votre mobile", "offres", """
# Voyager à l'étranger avec votre mobile

Vacances, voyage d'affaires ou séjour d'études : votre forfait Nébulis vous accompagne. L'itinérance est activée par défaut sur toutes les lignes ; ce que vous payez dépend de la zone dans laquelle vous vous trouvez.

## Les zones

| Zone | Pays et territoires |
|---|---|
| Zone UE | les 27 pays de l'Union européenne, l'Islande, le Liechtenstein, la Norvège et les DOM (Guadeloupe, Martinique, Guyane, La Réunion, Mayotte) |
| Zone 2 | Royaume-Uni, Suisse, Andorre, États-Unis, Canada, Maroc, Algérie, Tunisie, Turquie |
| Zone 3 | tous les autres pays |

## En Europe et dans les DOM : comme à la maison

Dans la zone UE, vous utilisez votre forfait comme en France : vos appels et SMS vers la France et vers les pays de la zone sont décomptés normalement, et les appels que vous recevez sont gratuits. Seul l'internet mobile est limité à une enveloppe spécifique :

| Forfait | Internet utilisable dans la zone UE |
|---|---|
| Essentiel 2 h | 1 Go |
| Liberté 30 Go | 10 Go |
| Liberté 100 Go 5G | 20 Go |
| Infini 250 Go 5G | 35 Go |

Cette enveloppe fait partie de votre enveloppe France : ce n'est pas un volume supplémentaire. Au-delà, chaque Go supplémentaire utilisé dans la zone UE est facturé 1,80 €, tant que votre enveloppe France n'est pas épuisée.

Abonnés Infini 250 Go 5G : le Royaume-Uni, la Suisse et Andorre sont traités comme la zone UE. Vous y utilisez votre forfait et vos 35 Go sans surcoût.

## Hors d'Europe : choisissez un Pass Voyage

Dans les zones 2 et 3, l'internet mobile est facturé au volume, ce qui peut coûter cher. Les Pass Voyage vous permettent de maîtriser votre budget :

| Pass | Volume | Validité | Prix |
|---|---|---|---|
| Pass Monde 1 Go | 1 Go | 7 jours | 10 € |
| Pass Monde 5 Go | 5 Go | 30 jours | 25 € |
| Pass Monde 10 Go | 10 Go | 30 jours | 40 € |

Les Pass Voyage sont valables dans les zones 2 et 3. Souscrivez-les avant votre départ ou sur place dans l'appli Nébulis & Moi : le pass démarre à votre première connexion dans un pays concerné. Il n'est pas renouvelé automatiquement ; à la fin du volume ou de la validité, vous pouvez en racheter un.

## Les tarifs sans Pass

| Usage | Zone 2 | Zone 3 |
|---|---|---|
| Appel émis | 1,50 €/min | 3,00 €/min |
| Appel reçu | 0,50 €/min | 1,50 €/min |
| SMS envoyé | 0,30 € | 0,50 € |
| Internet mobile | 2 € par Mo | 10 € par Mo |

Les Pass Voyage ne concernent que l'internet : les appels et SMS restent facturés selon ce tableau.

Pour éviter les mauvaises surprises, l'internet mobile utilisé hors Pass dans les zones 2 et 3 est bloqué lorsque votre consommation atteint 60 € TTC sur le mois. Un SMS vous prévient à 80 % de ce plafond. Vous pouvez demander à débloquer l'accès au 0 800 000 000.

## En avion et en bateau

À bord de certains avions et navires, votre téléphone se connecte à un réseau satellitaire. Ces communications ne sont incluses dans aucun forfait ni Pass Voyage : appels émis ou reçus à 5 €/min, SMS à 0,50 € et internet à 15 € par Mo. Activez le mode avion si vous ne souhaitez pas les utiliser.

## Avant de partir : notre check-list

- Vérifiez la zone de votre destination.
- Hors zone UE, souscrivez un Pass Voyage adapté à la durée de votre séjour.
- Activez l'itinérance des données dans les réglages de votre téléphone.
- Notez le numéro pour consulter votre messagerie depuis l'étranger : +33 1 00 00 05 55.
- Enregistrez le numéro de l'assistance perte et vol : 0 800 000 003, ou +33 1 00 00 00 03 depuis l'étranger.

## Appeler l'étranger depuis la France

Les appels passés depuis la France vers un numéro étranger ne relèvent pas de l'itinérance : ils sont facturés selon les tarifs internationaux du Guide des tarifs, ou inclus si vous avez l'Option International (5 €/mois).
""", typo=True)


doc("doc-26", "Conditions générales de vente – Offres grand public", "conditions", """
# Conditions générales de vente – Offres grand public

Version en vigueur au 1er mars 2025. Les présentes conditions générales de vente (« CGV ») s'appliquent aux offres de téléphonie mobile et d'accès à internet souscrites par des particuliers auprès de Nébulis Télécom, société par actions simplifiée au capital de 1 000 000 €, dont le siège est situé 18 avenue des Alizés, 99000 Portalban, immatriculée au RCS de Portalban sous le numéro 000 000 000 (ci-après « Nébulis »).

## Article 1 – Objet

Les CGV définissent les conditions dans lesquelles Nébulis fournit au client les services de communications électroniques qu'il a choisis (forfaits mobiles, offres box fibre et cuivre, options) et, le cas échéant, lui vend ou lui prête les équipements associés.

## Article 2 – Documents contractuels

Le contrat est constitué, par ordre de priorité décroissant :

1. du récapitulatif contractuel remis avant la souscription ;
2. des conditions particulières de l'offre souscrite (fiche d'information standardisée) ;
3. du Guide des tarifs en vigueur ;
4. des présentes CGV.

En cas de contradiction entre ces documents, le document de rang supérieur prévaut. L'ensemble de ces documents est disponible à tout moment sur www.nebulis.example et dans Mon Nébulis.

## Article 3 – Souscription

### 3.1 Conditions

Les offres sont réservées aux personnes physiques majeures agissant pour un usage personnel et non professionnel. Un même client peut souscrire au maximum 5 lignes mobiles et 2 offres box.

### 3.2 Justificatifs

Lors de la souscription, le client fournit une pièce d'identité en cours de validité et les coordonnées bancaires d'un compte dont il est titulaire. Pour une offre box, un justificatif de domicile de moins de 3 mois peut être demandé.

### 3.3 Refus de souscription

Nébulis peut refuser une souscription lorsque le client reste redevable de sommes au titre d'un précédent contrat Nébulis, lorsque les justificatifs fournis sont incomplets ou inexacts, ou en cas de fraude avérée.

## Article 4 – Droit de rétractation

Lorsque le contrat est conclu à distance (en ligne ou par téléphone) ou hors établissement, le client dispose d'un délai de 14 jours pour se rétracter, sans avoir à justifier de motif ni à payer de pénalité. Ce délai court à compter de la conclusion du contrat pour les services, et de la réception du bien pour les équipements achetés.

Le client exerce son droit en envoyant le formulaire de rétractation disponible dans Mon Nébulis ou toute déclaration dénuée d'ambiguïté. Nébulis rembourse les sommes versées dans un délai de 14 jours à compter de la réception de la rétractation, par le même moyen de paiement.

Si le client a expressément demandé que le service commence avant la fin du délai de rétractation, il paie le service fourni au prorata de la période écoulée jusqu'à sa rétractation. Les équipements doivent être renvoyés complets, dans leur emballage d'origine, au moyen de l'étiquette prépayée fournie par Nébulis.

Le droit de rétractation ne s'applique pas aux contrats conclus en boutique.

## Article 5 – Mise en service

### 5.1 Offres mobiles

La carte SIM est livrée en 2 à 3 jours ouvrés à l'adresse indiquée par le client. La ligne est activée au plus tard 24 heures après l'activation de la carte par le client dans Mon Nébulis. L'eSIM est disponible dès la validation de la souscription.

### 5.2 Offres box

Les délais de mise en service sont donnés à titre indicatif : 10 à 15 jours lorsque le raccordement du logement à la fibre nécessite l'intervention d'un technicien, 3 à 7 jours lorsqu'une prise fibre active est déjà présente, 7 jours ouvrés en moyenne pour la Box Cuivre.

Si la mise en service n'est pas intervenue dans un délai de 30 jours à compter de la commande pour une raison imputable à Nébulis, le client peut annuler sa commande sans frais ; les sommes éventuellement versées lui sont alors remboursées.

### 5.3 Rendez-vous avec un technicien

Le rendez-vous est fixé d'un commun accord sur un créneau de 2 heures. Le client ou une personne majeure qu'il a désignée doit être présent. Tout rendez-vous peut être modifié ou annulé sans frais au moins 24 heures à l'avance. Si le client est absent sans avoir annulé dans ce délai, des frais de déplacement injustifié de 79 € sont facturés. Si le technicien ne se présente pas sans avoir prévenu le client au moins 24 heures à l'avance, Nébulis crédite un avoir de 20 € sur le compte du client.

L'installation standard comprend la pose d'une prise terminale optique à moins de 30 mètres du point d'entrée de la fibre dans le logement, en apparent, sans travaux de génie civil. Les travaux supplémentaires éventuels font l'objet d'un devis préalable que le client est libre de refuser.

## Article 6 – Équipements

### 6.1 Équipements prêtés

La box, le décodeur TV 4K et, le cas échéant, le répéteur N-Mesh sont prêtés au client pour la durée du contrat et restent la propriété de Nébulis. Le client en assure la garde : il s'engage à les utiliser conformément à leur destination, à ne pas les ouvrir, les modifier ou les céder.

En cas de panne d'un équipement prêté, Nébulis le remplace gratuitement, sauf si la panne résulte d'une mauvaise utilisation, d'une chute ou d'une surtension non couverte par une protection adaptée.

### 6.2 Restitution

À la fin du contrat, quelle qu'en soit la cause, le client restitue les équipements prêtés dans un délai de 30 jours, au moyen de l'étiquette prépayée fournie par Nébulis, dans un point relais ou en boutique. À défaut, Nébulis facture les montants suivants : Box N6 : 150 € ; Box N6E : 200 € ; Box N7 : 250 € ; décodeur TV 4K : 100 € ; répéteur N-Mesh : 50 €.

### 6.3 Équipements vendus

Les téléphones, le répéteur N-Mesh acheté et le routeur Nébulis Go deviennent la propriété du client à leur paiement complet. Ils bénéficient de la garantie légale de conformité de 2 ans et de la garantie des vices cachés.

## Article 7 – Obligations de Nébulis

### 7.1 Qualité de service

Nébulis met en œuvre les moyens nécessaires pour assurer la continuité et la qualité de ses services. Les débits annoncés sont des débits maximaux théoriques ; le débit effectivement disponible dépend notamment de la ligne, de l'équipement du client et, pour le mobile, de la couverture et du nombre d'utilisateurs simultanés.

### 7.2 Maintenance

Des interruptions programmées peuvent être nécessaires pour la maintenance ou l'amélioration du réseau. Nébulis s'efforce de les réaliser entre 0 h et 6 h et en informe les clients concernés au moins 48 heures à l'avance, sauf urgence.

### 7.3 Indemnisation en cas d'interruption

En cas d'interruption totale du service d'accès à internet d'une offre box pendant plus de 3 jours consécutifs, imputable à Nébulis, le client bénéficie d'un avoir égal à 1/30 du prix mensuel de son offre par jour d'interruption, calculé dès le premier jour. L'interruption court à compter de son signalement par le client ou de sa détection par Nébulis. L'avoir est appliqué automatiquement sur la facture suivante.

Pour les abonnés Fibre Plus et Fibre Ultra, un routeur de secours 4G est en outre prêté gratuitement lorsque l'interruption dépasse 48 heures.

## Article 8 – Obligations du client

### 8.1 Usage raisonnable

Les services sont destinés à un usage personnel et non lucratif. Les appels, SMS et MMS illimités s'entendent hors numéros spéciaux et surtaxés, dans la limite de 250 correspondants différents par mois ; chaque appel est interrompu au bout de 3 heures et peut être renouvelé. Sont notamment interdits : la revente des services, l'utilisation de la ligne comme passerelle de communication (boîtiers permettant d'acheminer des appels d'autres utilisateurs), les appels ou envois automatisés et l'utilisation de la carte SIM dans un équipement autre qu'un téléphone, une tablette, une montre connectée ou un routeur personnel.

### 8.2 Sécurité

Le client est responsable de la confidentialité de ses identifiants, de son code PIN, de son code secret de messagerie et de la clé de son réseau Wi-Fi. Il signale sans délai la perte ou le vol de sa carte SIM au 0 800 000 003, joignable 24 h/24. Les communications passées avant ce signalement restent à sa charge.

### 8.3 Informations personnelles

Le client informe Nébulis de tout changement de domicile, de coordonnées bancaires ou d'adresse électronique, dans Mon Nébulis.

## Article 9 – Prix et facturation

Les prix des services et des équipements figurent dans le Guide des tarifs. Les abonnements et options sont facturés mensuellement et d'avance ; les communications hors forfait sont facturées à terme échu. La facture est émise le 1er de chaque mois et mise à disposition dans Mon Nébulis au plus tard le 3.

La facture est électronique par défaut. Le client peut demander une facture papier, facturée 1,50 € par mois, sauf pour les titulaires de la carte mobilité inclusion, pour lesquels elle est gratuite.

Le client peut contester une facture dans un délai d'un an à compter de sa date d'émission. La contestation ne suspend pas l'obligation de payer la partie non contestée.

## Article 10 – Paiement et incidents de paiement

### 10.1 Modalités

Les factures sont payables par prélèvement SEPA, 10 jours après leur émission, ou, pour les autres moyens de paiement, au plus tard le 15 du mois. Le paiement par chèque ou en espèces en boutique donne lieu à des frais de gestion de 2 € par paiement.

### 10.2 Incidents

Tout prélèvement rejeté donne lieu à des frais de 7,50 €. À défaut de paiement à l'échéance, et après un rappel adressé à J+7, Nébulis peut restreindre les services à compter de J+15 (seuls restent possibles les appels entrants, les appels vers les numéros d'urgence et vers le service client), les suspendre totalement à compter de J+30, puis résilier le contrat à compter de J+60, après mise en demeure restée sans effet pendant 8 jours.

Les sommes impayées portent intérêt au taux légal. Le rétablissement d'une ligne suspendue, après paiement intégral, donne lieu à des frais de 15 €.

## Article 11 – Durée et engagement

### 11.1 Durée

Le contrat est conclu pour une durée indéterminée, le cas échéant assortie d'une durée minimale d'engagement :

- forfaits mobiles sans téléphone et Box Cuivre : sans engagement ;
- offres Box Fibre : engagement de 12 mois ;
- forfaits mobiles avec téléphone à prix réduit : engagement de 24 mois.

À l'issue de la période d'engagement, le contrat se poursuit sans engagement, aux conditions tarifaires en vigueur.

### 11.2 Résiliation anticipée

En cas de résiliation pendant la période d'engagement, hors motif légitime :

- pour une offre Box Fibre, le client reste redevable des mensualités restant à courir jusqu'à la fin de la période d'engagement ;
- pour un forfait mobile engagé 24 mois, le client reste redevable, si la résiliation intervient au cours des 12 premiers mois, des mensualités restant à courir jusqu'au 12e mois et du quart des 12 mensualités suivantes, et, si elle intervient à partir du 13e mois, du quart des mensualités restant à courir.

### 11.3 Changement d'offre

Le client peut changer d'offre à tout moment et gratuitement. Le passage à une offre supérieure ne modifie pas la durée d'engagement en cours. Le passage à une offre box de gamme inférieure n'est possible qu'à l'issue de la période d'engagement.

## Article 12 – Modification du contrat

Nébulis peut modifier le contrat, notamment ses prix. Le client en est informé par écrit au moins un mois avant l'entrée en vigueur de la modification. Il peut alors résilier son contrat sans frais, y compris pendant la période d'engagement, jusqu'à 4 mois après l'entrée en vigueur de la modification. Ce droit ne s'applique pas aux modifications exclusivement favorables au client ni à celles imposées par la loi ou la réglementation.

## Article 13 – Résiliation par le client

### 13.1 Modalités

Le client peut résilier son contrat à tout moment : en ligne dans Mon Nébulis, par téléphone au service client ou par lettre recommandée avec accusé de réception adressée au Service Résiliations. La résiliation prend effet 10 jours après la réception de la demande par Nébulis, sauf si le client demande une date ultérieure.

Lorsque le client demande la portabilité de son numéro auprès d'un autre opérateur, la résiliation prend effet le jour du portage, sans autre démarche.

### 13.2 Frais de résiliation

La résiliation d'une offre box donne lieu à des frais de résiliation de 59 €, correspondant aux coûts de fermeture de la ligne. La résiliation d'un forfait mobile n'entraîne aucun frais de résiliation.

### 13.3 Motifs légitimes

Sur présentation d'un justificatif, aucune somme au titre de l'engagement ni aucun frais de résiliation n'est dû lorsque la résiliation est motivée par :

- un déménagement dans un logement où Nébulis ne peut pas fournir un service équivalent, ou un départ à l'étranger ;
- un licenciement, le client étant inscrit comme demandeur d'emploi ;
- une procédure de surendettement déclarée recevable ;
- le décès du titulaire ;
- une maladie ou un handicap rendant impossible l'utilisation du service.

## Article 14 – Suspension et résiliation par Nébulis

Nébulis peut suspendre tout ou partie des services, après information du client, en cas de défaut de paiement (article 10), d'utilisation frauduleuse ou contraire à l'article 8, ou de fausse déclaration lors de la souscription. Si la situation n'est pas régularisée dans un délai de 8 jours après une mise en demeure, Nébulis peut résilier le contrat de plein droit. Les sommes dues au titre de l'engagement deviennent alors exigibles.

Nébulis peut suspendre immédiatement une ligne, sans préavis, en cas d'utilisation frauduleuse avérée ou sur demande d'une autorité judiciaire.

## Article 15 – Portabilité du numéro

La portabilité est gratuite. Le client qui souhaite conserver son numéro en changeant d'opérateur communique son code RIO, obtenu au 0 800 000 179 ou dans Mon Nébulis, à son nouvel opérateur. Le portage intervient dans un délai de 3 jours ouvrables à compter de la demande, sauf si le client demande une date ultérieure ; le jour du portage, l'interruption de service ne peut excéder 4 heures. En cas de retard de portage imputable à Nébulis, le client bénéficie d'un avoir de 5 € par jour de retard.

## Article 16 – Données personnelles

Nébulis traite les données personnelles du client pour l'exécution du contrat (souscription, fourniture des services, facturation, recouvrement, assistance), pour respecter ses obligations légales et, avec l'accord du client, pour lui adresser des offres commerciales.

Les données de trafic (numéros appelés, dates, durées, volumes) sont conservées un an. Les factures et pièces comptables sont conservées 10 ans. Les données de prospection sont supprimées 3 ans après le dernier contact à l'initiative du client.

Le client dispose d'un droit d'accès, de rectification, d'effacement, de limitation, d'opposition et de portabilité de ses données. Il l'exerce auprès du délégué à la protection des données, par e-mail à dpo@nebulis.example ou par courrier au siège de Nébulis. Il peut également introduire une réclamation auprès de l'autorité de contrôle compétente.

## Article 17 – Réclamations et médiation

Le client adresse ses réclamations au service client (0 800 000 000, Mon Nébulis, boutiques), qui s'engage à répondre sous 10 jours ouvrés. À défaut de réponse satisfaisante, il peut adresser une réclamation écrite au Service Consommateurs, qui répond sous 30 jours.

Si la réclamation écrite n'a pas obtenu de réponse dans un délai d'un mois, ou si la réponse ne le satisfait pas, le client peut saisir gratuitement le Médiateur des services télécoms, dans un délai d'un an à compter de sa réclamation écrite. Le Médiateur rend un avis dans un délai de 90 jours, que les parties sont libres d'accepter ou de refuser.

## Article 18 – Responsabilité

La responsabilité de Nébulis ne peut être engagée en cas de force majeure, de mauvaise utilisation des services ou des équipements par le client, de perturbations causées par des travaux réalisés par des tiers, ou de dysfonctionnement des équipements personnels du client. Nébulis n'est pas responsable des contenus consultés ou échangés par le client au moyen des services.

## Article 19 – Droit applicable

Le contrat est soumis au droit français. Tout litige relève des juridictions compétentes dans les conditions prévues par le code de procédure civile ; le client consommateur peut saisir, à son choix, la juridiction du lieu où il demeurait au moment de la conclusion du contrat ou de la survenance du fait dommageable.
""", typo=True, nbsp=True)


doc("doc-27", "Engagements, frais et pénalités", "conditions", """
# Engagements, frais et pénalités

Cette fiche récapitule les durées d'engagement de nos offres, les sommes dues en cas de résiliation anticipée et les principaux frais ponctuels. Les montants sont en euros TTC.

## Durées d'engagement

| Offre | Engagement |
|---|---|
| Forfait mobile seul (SIM ou eSIM) | aucun |
| Forfait mobile avec smartphone à prix réduit | 24 mois |
| Fibre Essentielle, Fibre Plus, Fibre Ultra | 12 mois |
| Box Cuivre | aucun |
| Options mobiles et TV, location de répéteur | aucun |

À la fin de la période d'engagement, votre contrat continue sans engagement : vous pouvez le résilier à tout moment, en ne payant que les frais de résiliation s'il s'agit d'une box.

## Résilier avant la fin de l'engagement

### Offres Box Fibre

Vous payez les mensualités restant à courir jusqu'à la fin des 12 mois, plus les frais de résiliation de 59 €.

Exemple : vous avez souscrit la Fibre Plus à 34,99 € par mois et vous résiliez au bout de 5 mois. Il reste 7 mensualités, soit 7 × 34,99 € = 244,93 €, auxquels s'ajoutent 59 € de frais de résiliation : 303,93 € au total.

### Forfait mobile avec smartphone

- Résiliation pendant les 12 premiers mois : mensualités restant à courir jusqu'au 12e mois, plus le quart des 12 mensualités suivantes.
- Résiliation à partir du 13e mois : le quart des mensualités restant à courir.

Exemple 1 : forfait Liberté 100 Go 5G à 14,99 € par mois, résilié au bout de 8 mois. Vous payez les 4 mensualités restant jusqu'au 12e mois (59,96 €) et le quart des 12 mensualités suivantes (44,97 €), soit 104,93 €.

Exemple 2 : même forfait, résilié au bout de 20 mois. Il reste 4 mensualités (59,96 €), dont vous payez le quart : 14,99 €.

### Aucune somme n'est due en cas de motif légitime

Déménagement sans service équivalent possible ou départ à l'étranger, licenciement, surendettement, décès, maladie ou handicap : sur justificatif, ni les mensualités restantes ni les frais de résiliation ne sont facturés. De même, vous pouvez résilier sans frais dans les 4 mois qui suivent une hausse de prix ou une modification défavorable de votre contrat.

## Changer d'offre pendant l'engagement

Passer à une offre supérieure est possible à tout moment, gratuitement, et ne prolonge pas votre engagement. En revanche, le passage à une offre box de gamme inférieure (par exemple de la Fibre Ultra à la Fibre Plus) n'est possible qu'à la fin de la période d'engagement. Pour les forfaits mobiles sans téléphone, vous pouvez changer de forfait librement, à la hausse comme à la baisse.

## Les frais ponctuels

| Prestation | Tarif |
|---|---|
| Activation d'une ligne mobile | 10 € |
| Mise en service d'une box | 49 € |
| Résiliation d'une box | 59 € |
| Remplacement de carte SIM ou d'eSIM | 10 € (gratuit si la carte est défectueuse) |
| Changement de numéro mobile | 15 € |
| Rejet de prélèvement | 7,50 € |
| Rétablissement après suspension pour impayé | 15 € |
| Déplacement injustifié d'un technicien | 79 € |
| Facture papier | 1,50 € par mois |

## Pénalités pour matériel non restitué

Les équipements prêtés doivent être rendus dans les 30 jours suivant la fin du contrat. À défaut : Box N6 150 €, Box N6E 200 €, Box N7 250 €, décodeur TV 4K 100 €, répéteur N-Mesh 50 €.
""", nbsp=True)


doc("doc-28", "Restituer votre matériel", "procedures", """
# Restituer votre matériel

À la fin de votre contrat box, quelle qu'en soit la raison (résiliation, portabilité vers un autre opérateur, résiliation pour impayé), les équipements qui vous ont été prêtés doivent nous être rendus dans les 30 jours.

## Quels équipements rendre ?

- La box (Box N6, N6E ou N7) et son bloc d'alimentation.
- Le ou les décodeurs TV 4K, avec leur télécommande.
- Les répéteurs N-Mesh inclus dans votre offre ou loués.

Vous n'avez pas à rendre les câbles, ni les équipements que vous avez achetés (répéteur N-Mesh acheté, routeur Nébulis Go).

## Comment les renvoyer ?

1. Téléchargez l'étiquette de retour prépayée envoyée par e-mail après votre résiliation, ou retrouvez-la dans Mon Nébulis, rubrique Mes équipements.
2. Emballez les équipements avec soin, de préférence dans leur carton d'origine.
3. Déposez le colis dans l'un de nos points relais partenaires. Conservez la preuve de dépôt jusqu'à la réception de la confirmation.

Vous pouvez aussi déposer les équipements dans une boutique Nébulis : un reçu vous est remis immédiatement.

Nous vous confirmons la bonne réception par e-mail sous 10 jours.

## Si le matériel n'est pas rendu

Passé le délai de 30 jours, les équipements non restitués vous sont facturés : 150 € pour une Box N6, 200 € pour une Box N6E, 250 € pour une Box N7, 100 € par décodeur TV 4K et 50 € par répéteur N-Mesh. Si vous renvoyez le matériel après facturation, dans un délai de 3 mois, le montant vous est remboursé.
""", typo=True)


doc("doc-29", "Codes PIN et PUK", "depannage", """
# Codes PIN et PUK

Le code PIN de votre carte SIM figure sur le support en plastique de la carte. Après 3 codes PIN erronés, la carte se bloque : saisissez alors le code PUK à 8 chiffres, disponible dans Mon Nébulis (rubrique Ma ligne, « Codes PIN et PUK ») ou au 0 800 000 000. Après 10 codes PUK erronés, la carte est définitivement inutilisable et doit être remplacée (10 €).
""")


doc("doc-30", "La facture papier", "facturation", """
# La facture papier

Vos factures sont électroniques par défaut et consultables dans Mon Nébulis. Vous pouvez demander à recevoir une facture papier par courrier, pour 1,50 € par mois, dans Mon Nébulis, rubrique Factures, « Mes préférences ». Elle est gratuite pour les titulaires de la carte mobilité inclusion.
""", typo=True)


# ---------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------
# Each passage is (document_id, exact_substring) or
# (document_id, exact_substring, occurrence) with occurrence starting at 1.
# Substrings are written like the document sources (ASCII apostrophes, plain
# spaces); the document's typographic transformation is applied before lookup.
# Unanswerable questions have answer=None and no passages.

QUESTIONS = []


def q(question, answer, types, passages):
    QUESTIONS.append(
        {"question": question, "answer": answer, "types": list(types), "passages": list(passages)}
    )


q("Combien coûte par mois le forfait avec 100 Go en 5G ?",
  "Le forfait Liberté 100 Go 5G coûte 14,99 € par mois ; il est sans engagement lorsqu'il est souscrit sans téléphone.",
  ["factual", "numerical"],
  [("doc-01", "Liberté 100 Go 5G | Appels, SMS et MMS illimités | 100 Go en 5G | 20 Go | 14,99 €")])

q("J'ai déjà la fibre chez vous : est-ce que les forfaits mobiles de la famille ont droit à une réduction ?",
  "Oui : avec une offre Box Fibre, chaque forfait Liberté 100 Go 5G ou Infini 250 Go 5G du même compte client bénéficie de l'Avantage Duo, soit 5 € de remise par mois, dans la limite de 4 lignes. La remise ne s'applique pas aux forfaits Essentiel 2 h et Liberté 30 Go.",
  ["yes_no", "multi_passage"],
  [("doc-01", "Vous êtes aussi abonné à une Box Fibre Nébulis ? Chaque forfait Liberté 100 Go 5G ou Infini 250 Go 5G rattaché au même compte client bénéficie d'une remise de 5 € par mois, dans la limite de 4 lignes."),
   ("doc-06", "Elle ne s'applique ni à la Box Cuivre, ni aux forfaits Essentiel 2 h et Liberté 30 Go.")])

q("Quelle différence de vitesse entre la Fibre Plus et la Fibre Ultra ?",
  "La Fibre Plus offre jusqu'à 2 Gb/s en réception et 900 Mb/s en envoi ; la Fibre Ultra monte jusqu'à 8 Gb/s dans les deux sens, un débit partagé entre les appareils connectés.",
  ["comparison", "numerical", "multi_passage"],
  [("doc-02", "Fibre Plus | 2 Gb/s | 900 Mb/s | Box N6E (Wi-Fi 6E) et décodeur TV 4K | 150 chaînes | 34,99 €/mois | 39,99 €/mois"),
   ("doc-02", "Fibre Ultra | 8 Gb/s | 8 Gb/s | Box N7 (Wi-Fi 7), décodeur TV 4K et un répéteur N-Mesh | 220 chaînes et Pack Cinéma inclus | 49,99 €/mois | 54,99 €/mois")])

q("Comment je récupère mon code RIO pour partir chez un autre opérateur ?",
  "Appelez gratuitement le 0 800 000 179 depuis la ligne concernée (serveur vocal disponible 24 h/24) : le RIO est donné oralement et confirmé par SMS pour un mobile. Il est aussi affiché dans Mon Nébulis, rubrique Ma ligne, « Mon code RIO ».",
  ["procedural"],
  [("doc-18", "Appelez le 0 800 000 179 depuis la ligne concernée (mobile ou fixe de votre box). Ce serveur vocal est gratuit et disponible 24 h/24. Votre RIO vous est donné oralement et confirmé par SMS pour une ligne mobile.\n- Ou consultez Mon Nébulis, rubrique Ma ligne, puis « Mon code RIO ».")])

q("Je viens chez vous en gardant mon numéro : combien de temps prend le transfert ?",
  "Le portage a lieu au plus tôt 3 jours ouvrables après la souscription (ou après l'activation de la nouvelle carte SIM pour un mobile) ; le jour du transfert, la ligne peut être coupée 4 heures au maximum.",
  ["numerical", "factual"],
  [("doc-18", "Choisissez la date de portage. Le portage a lieu au plus tôt 3 jours ouvrables après la souscription ou, pour un mobile, après l'activation de votre nouvelle carte SIM.\n4. Le jour du portage, votre ligne peut être coupée pendant 4 heures au maximum.")])

q("On m'a volé mon portable hier soir, qu'est-ce que je dois faire ?",
  "Suspendez tout de suite la ligne dans Mon Nébulis ou au 0 800 000 003 (24 h/24), déposez plainte auprès de la police ou de la gendarmerie, puis commandez une nouvelle carte SIM sur laquelle votre ligne sera réactivée.",
  ["procedural", "list"],
  [("doc-19", "Suspendez immédiatement votre ligne pour éviter toute utilisation frauduleuse : dans Mon Nébulis, rubrique Ma ligne, « Suspendre ma ligne », ou au 0 800 000 003, joignable 24 h/24 et 7 j/7.\n2. En cas de vol, déposez plainte auprès de la police ou de la gendarmerie. Le récépissé vous sera demandé si vous avez souscrit l'Assurance Sérénité Mobile.\n3. Commandez une nouvelle carte SIM (voir ci-dessous). Votre ligne sera réactivée sur la nouvelle carte.")])

q("Avez-vous une offre spéciale pour les étudiants ou les moins de 26 ans ?",
  None, ["yes_no"], [])

q("Combien me coûtera une nouvelle puce si la mienne est abîmée ?",
  "Une nouvelle carte SIM (ou eSIM) coûte 10 €, facturés sur la prochaine facture ; le remplacement est gratuit si la carte est défectueuse.",
  ["numerical", "multi_passage"],
  [("doc-19", "La nouvelle carte SIM coûte 10 €, facturés sur votre prochaine facture. Elle est gratuite si votre carte est défectueuse."),
   ("doc-27", "Remplacement de carte SIM ou d'eSIM | 10 € (gratuit si la carte est défectueuse)")])

q("Je déménage dans trois semaines, comment faire suivre ma box ?",
  "Déclarez le déménagement au moins 15 jours avant dans Mon Nébulis (Ma ligne, « Je déménage ») ou au 0 800 000 000, indiquez la nouvelle adresse pour le test d'éligibilité, choisissez la date de mise en service et si besoin un rendez-vous technicien, puis emportez box, décodeur et répéteurs. Le transfert est gratuit.",
  ["procedural", "multi_passage"],
  [("doc-16", "Signalez votre déménagement au moins 15 jours avant la date prévue, idéalement un mois avant si votre nouveau logement doit être raccordé à la fibre."),
   ("doc-16", "Connectez-vous à Mon Nébulis, rubrique Ma ligne, puis choisissez « Je déménage ». Vous pouvez aussi appeler le 0 800 000 000.\n2. Indiquez votre nouvelle adresse : nous vérifions immédiatement son éligibilité à la fibre et au cuivre.\n3. Choisissez la date de mise en service dans votre nouveau logement et, si nécessaire, un créneau de rendez-vous avec un technicien.\n4. Le jour du déménagement, débranchez votre box, votre décodeur et vos répéteurs, et emportez-les avec vos câbles : vous les réinstallerez dans votre nouveau logement.")])

q("Mon futur appartement n'a pas la fibre et je suis encore engagé : est-ce que je peux arrêter sans payer ?",
  "Oui. Nébulis propose d'abord la Box Cuivre, mais un déménagement dans un logement où un service équivalent ne peut pas être fourni est un motif légitime : sur justificatif de domicile, ni les mensualités restantes ni les frais de résiliation ne sont facturés.",
  ["yes_no", "multi_passage"],
  [("doc-16", "Si vous préférez résilier, le déménagement dans un logement où Nébulis ne peut pas vous fournir un service équivalent est un motif légitime : la résiliation est alors sans frais, même pendant la période d'engagement, sur présentation d'un justificatif de domicile à la nouvelle adresse."),
   ("doc-17", "Joignez un justificatif à votre demande. Dans ces cas, ni les mensualités restantes ni les frais de résiliation ne sont facturés.")])

q("Dans quels cas peut-on résilier sans frais pendant la période d'engagement ?",
  "Sur justificatif : déménagement là où Nébulis ne peut pas fournir un service équivalent ou départ à l'étranger, licenciement avec inscription comme demandeur d'emploi, surendettement déclaré recevable, décès du titulaire, maladie ou handicap rendant impossible l'utilisation du service.",
  ["list"],
  [("doc-17", "déménagement dans un logement où Nébulis ne peut pas fournir un service équivalent, ou départ à l'étranger ;\n- licenciement, si vous êtes inscrit comme demandeur d'emploi ;\n- dossier de surendettement déclaré recevable ;\n- décès du titulaire ;\n- maladie ou handicap rendant impossible l'utilisation du service.")])

q("J'ai pris la Fibre Plus il y a 5 mois, combien ça va me coûter si j'arrête maintenant ?",
  "Il faut payer les 7 mensualités restantes de l'engagement de 12 mois (7 × 34,99 € = 244,93 €) plus 59 € de frais de résiliation, soit 303,93 €, sauf motif légitime.",
  ["numerical", "multi_passage"],
  [("doc-27", "Exemple : vous avez souscrit la Fibre Plus à 34,99 € par mois et vous résiliez au bout de 5 mois. Il reste 7 mensualités, soit 7 × 34,99 € = 244,93 €, auxquels s'ajoutent 59 € de frais de résiliation : 303,93 € au total."),
   ("doc-17", "Offres fibre pendant l'engagement de 12 mois : les mensualités restant à courir jusqu'à la fin de l'engagement s'ajoutent aux frais de résiliation.")])

q("Est-il possible d'avoir une adresse IP fixe avec la Box Fibre ?",
  None, ["yes_no"], [])

q("Qu'est-ce qui se passe si je ne renvoie pas la box après avoir résilié ?",
  "Les équipements non restitués dans les 30 jours sont facturés : 150 € pour une Box N6, 200 € pour une Box N6E, 250 € pour une Box N7, 100 € par décodeur et 50 € par répéteur. Le montant est remboursé si le matériel est renvoyé dans les 3 mois suivant la facturation.",
  ["factual", "numerical"],
  [("doc-28", "Passé le délai de 30 jours, les équipements non restitués vous sont facturés : 150 € pour une Box N6, 200 € pour une Box N6E, 250 € pour une Box N7, 100 € par décodeur TV 4K et 50 € par répéteur N-Mesh. Si vous renvoyez le matériel après facturation, dans un délai de 3 mois, le montant vous est remboursé.")])

q("Le voyant Fibre de ma box est allumé en rouge, ça veut dire quoi ?",
  "Un voyant Fibre rouge signifie que la box ne reçoit aucun signal optique ; il faut vérifier le câble fibre.",
  ["definition"],
  [("doc-21", "Fibre | rouge | Aucun signal optique n'est reçu. | Vérifiez le câble fibre (partie 3.1).")])

q("Plus d'internet à la maison : qu'est-ce que je dois vérifier avant d'appeler le support ?",
  "Consultez la carte des incidents dans l'appli ou Mon Nébulis, lancez le test de ligne à distance (« Tester ma ligne »), puis redémarrez la box en la débranchant 30 secondes et attendez 5 minutes.",
  ["procedural", "list", "multi_passage"],
  [("doc-21", "Ouvrez l'appli Nébulis & Moi, rubrique Assistance, puis « Carte des incidents », ou consultez la même rubrique dans Mon Nébulis."),
   ("doc-21", "Dans Mon Nébulis, rubrique Assistance, choisissez « Tester ma ligne »."),
   ("doc-21", "Redémarrez la box : débranchez son alimentation pendant 30 secondes, rebranchez-la et attendez 5 minutes.")])

q("Le wifi rame dans la chambre du haut alors qu'à côté de la box ça va bien, vous me conseillez quoi ?",
  "C'est un problème de couverture Wi-Fi : sur plusieurs étages, un répéteur N-Mesh est souvent indispensable, à placer à mi-chemin entre la box et la pièce mal couverte plutôt que dans cette pièce.",
  ["procedural", "multi_passage"],
  [("doc-22", "Si le débit est bon près de la box mais faible ailleurs, le problème vient de la couverture Wi-Fi."),
   ("doc-22", "Dans un logement de plus de 100 m², sur plusieurs étages ou avec des murs épais, un répéteur N-Mesh est souvent indispensable."),
   ("doc-22", "Placez le répéteur à mi-chemin entre la box et la zone mal couverte : installé dans une pièce où le signal est déjà très faible, il ne peut relayer qu'un signal faible.")])

q("Combien d'appareils peut-on connecter en même temps au Wi-Fi de la Box N6 ?",
  None, ["numerical"], [])

q("Quelle est la différence entre le wifi 2,4 GHz et le 5 GHz ?",
  "La bande 2,4 GHz porte plus loin et traverse mieux les murs, mais plafonne vers 50 à 150 Mb/s et est souvent encombrée ; la bande 5 GHz offre 300 à 900 Mb/s près de la box mais traverse moins bien les murs.",
  ["comparison", "definition", "multi_passage"],
  [("doc-22", "2,4 GHz | 50 à 150 Mb/s | la meilleure, traverse bien les murs | souvent encombrée par les réseaux voisins, perturbée par les fours à micro-ondes et le Bluetooth"),
   ("doc-22", "5 GHz | 300 à 900 Mb/s à proximité de la box | moyenne, traverse moins bien les murs | le meilleur compromis dans la plupart des logements")])

q("La télécommande de mon décodeur ne fait plus rien, même avec des piles neuves.",
  "Il faut l'associer de nouveau : à moins d'un mètre du décodeur, maintenez simultanément les touches OK et Retour pendant 5 secondes jusqu'à ce que son voyant clignote. En attendant, le décodeur peut être piloté depuis l'appli Nébulis & Moi.",
  ["procedural", "multi_passage"],
  [("doc-09", "si elle ne répond plus après un changement de piles, maintenez simultanément les touches OK et Retour pendant 5 secondes, à moins d'un mètre du décodeur, jusqu'à ce que son voyant clignote."),
   ("doc-21", "En attendant, vous pouvez piloter le décodeur depuis l'appli Nébulis & Moi, rubrique Télécommande.")])

q("J'ai un message TV-02 sur une chaîne, ça signifie quoi ?",
  "TV-02 signifie que les droits de la chaîne n'ont pas été reçus : la chaîne ne fait pas partie de l'offre ou le bouquet n'est pas encore activé. Après une souscription, attendez 15 minutes, redémarrez le décodeur puis vérifiez vos options TV dans Mon Nébulis.",
  ["definition"],
  [("doc-21", "TV-02 | Les droits de la chaîne n'ont pas été reçus : la chaîne ne fait pas partie de votre offre ou le bouquet n'est pas encore activé. | Après une souscription, patientez 15 minutes, puis redémarrez le décodeur. Vérifiez ensuite vos options TV dans Mon Nébulis.")])

q("Comment écouter mes messages vocaux quand je n'ai pas mon portable sur moi ?",
  "Depuis n'importe quel autre téléphone, en France ou à l'étranger, appelez le +33 1 00 00 05 55, puis tapez votre numéro de mobile et votre code secret de messagerie.",
  ["procedural"],
  [("doc-23", "Depuis un autre téléphone, en France ou à l'étranger : appelez le +33 1 00 00 05 55, puis tapez votre numéro de mobile et votre code secret.")])

q("J'ai oublié le code de ma boîte vocale, comment le remettre à zéro ?",
  "Dans Mon Nébulis, rubrique Ma ligne, puis Messagerie vocale, choisissez « Réinitialiser le code » : un code provisoire est envoyé par SMS et devra être changé à la consultation suivante.",
  ["procedural"],
  [("doc-23", "Réinitialisez-le dans Mon Nébulis, rubrique Ma ligne, puis Messagerie vocale, « Réinitialiser le code ». Un code provisoire vous est envoyé par SMS ; vous devrez le changer lors de votre prochaine consultation.")])

q("Je pars deux semaines en Espagne avec le forfait Liberté 30 Go : combien de data j'aurai là-bas ?",
  "L'Espagne fait partie de la zone UE : vous pouvez y utiliser 10 Go de votre forfait Liberté 30 Go, décomptés de l'enveloppe France, puis chaque Go supplémentaire est facturé 1,80 € tant que l'enveloppe France n'est pas épuisée.",
  ["numerical", "multi_passage"],
  [("doc-25", "Zone UE | les 27 pays de l'Union européenne, l'Islande, le Liechtenstein, la Norvège et les DOM (Guadeloupe, Martinique, Guyane, La Réunion, Mayotte)"),
   ("doc-25", "Liberté 30 Go | 10 Go"),
   ("doc-25", "Au-delà, chaque Go supplémentaire utilisé dans la zone UE est facturé 1,80 €, tant que votre enveloppe France n'est pas épuisée.")])

q("Est-ce que mon forfait marche normalement à Londres ?",
  "Cela dépend du forfait : avec Infini 250 Go 5G, le Royaume-Uni est traité comme l'Union européenne et le forfait s'y utilise sans surcoût. Avec les autres forfaits, le Royaume-Uni est en zone 2 : hors Pass Voyage, l'internet mobile y coûte 2 € par Mo.",
  ["yes_no", "multi_passage"],
  [("doc-25", "Abonnés Infini 250 Go 5G : le Royaume-Uni, la Suisse et Andorre sont traités comme la zone UE. Vous y utilisez votre forfait et vos 35 Go sans surcoût."),
   ("doc-25", "Zone 2 | Royaume-Uni, Suisse, Andorre, États-Unis, Canada, Maroc, Algérie, Tunisie, Turquie"),
   ("doc-25", "Internet mobile | 2 € par Mo | 10 € par Mo")])

q("Je pars 15 jours aux États-Unis et je veux utiliser internet sans exploser ma facture. Quel pass prendre, et à quel prix ?",
  "Les États-Unis sont en zone 2, couverte par les Pass Voyage. Pour 15 jours, il faut un pass valable 30 jours : le Pass Monde 5 Go à 25 € (ou le Pass Monde 10 Go à 40 €), le Pass Monde 1 Go à 10 € ne durant que 7 jours.",
  ["numerical", "comparison", "multi_passage"],
  [("doc-25", "Zone 2 | Royaume-Uni, Suisse, Andorre, États-Unis, Canada, Maroc, Algérie, Tunisie, Turquie"),
   ("doc-25", "Pass Monde 1 Go | 1 Go | 7 jours | 10 € |\n| Pass Monde 5 Go | 5 Go | 30 jours | 25 € |\n| Pass Monde 10 Go | 10 Go | 30 jours | 40 €")])

q("Comment transférer mon abonnement au nom de ma fille ?",
  None, ["procedural"], [])

q("Par quels moyens puis-je régler ma facture ?",
  "Par prélèvement SEPA (moyen par défaut) ou par carte bancaire, gratuitement, ou par chèque ou en espèces en boutique, avec 2 € de frais de gestion par paiement.",
  ["list"],
  [("doc-13", "Prélèvement SEPA | gratuit | à la date de prélèvement |\n| Carte bancaire | gratuit | immédiate |\n| Chèque | 2 € par paiement | à réception et encaissement |\n| Espèces en boutique | 2 € par paiement | immédiate")])

q("Ma banque a refusé le prélèvement ce mois-ci, vous allez me compter des frais ?",
  "Oui, des frais de rejet de 7,50 € sont ajoutés à la prochaine facture ; il est conseillé de régler le montant dû par carte bancaire dans Mon Nébulis.",
  ["yes_no", "numerical", "multi_passage"],
  [("doc-14", "Si votre banque rejette le prélèvement (provision insuffisante, compte clôturé, opposition), des frais de rejet de 7,50 € sont ajoutés à votre prochaine facture."),
   ("doc-06", "Rejet de prélèvement | 7,50 €")])

q("Que se passe-t-il si je ne paie pas ma facture ?",
  "Un rappel est envoyé par SMS et e-mail à J+7, les services sont restreints à J+15, les lignes sont totalement suspendues à J+30 et le contrat est résilié à J+60 avec transmission au recouvrement.",
  ["procedural", "list"],
  [("doc-14", "J+7 | Rappel par SMS et par e-mail. |\n| J+15 | Lettre de relance et restriction des services : seuls les appels entrants, les numéros d'urgence et le service client restent accessibles. |\n| J+30 | Suspension totale des lignes concernées, à l'exception des numéros d'urgence. |\n| J+60 | Résiliation du contrat pour défaut de paiement et transmission du dossier au service de recouvrement.")])

q("Pourquoi ma toute première facture est-elle si élevée ?",
  "Elle comprend les frais d'activation (10 € par ligne mobile) ou de mise en service (49 € pour une box), l'abonnement au prorata jusqu'à la fin du premier mois et l'abonnement du mois suivant, facturé d'avance.",
  ["factual", "list"],
  [("doc-12", "les frais d'activation (10 € par ligne mobile) ou de mise en service (49 € pour une box) ;\n- l'abonnement au prorata des jours entre votre mise en service et la fin du mois ;\n- l'abonnement du mois suivant, facturé d'avance.")])

q("Recevoir ses factures par la poste, c'est payant ?",
  "Oui, la facture papier coûte 1,50 € par mois ; elle est gratuite pour les titulaires de la carte mobilité inclusion.",
  ["yes_no", "numerical", "multi_passage"],
  [("doc-30", "Vous pouvez demander à recevoir une facture papier par courrier, pour 1,50 € par mois, dans Mon Nébulis, rubrique Factures, « Mes préférences »."),
   ("doc-26", "Le client peut demander une facture papier, facturée 1,50 € par mois, sauf pour les titulaires de la carte mobilité inclusion, pour lesquels elle est gratuite.")])

q("Quel est le délai de réparation d'un smartphone confié au service après-vente ?",
  None, ["numerical"], [])

q("À quelles heures je peux joindre le support technique ?",
  "L'assistance technique répond gratuitement au 0 800 000 001, 7 jours sur 7, de 8 h à 22 h.",
  ["factual"],
  [("doc-15", "Assistance technique : 0 800 000 001, 7 jours sur 7 de 8 h à 22 h.")])

q("Le service client ne m'a jamais répondu, à qui dois-je m'adresser ?",
  "Sans réponse sous 10 jours ouvrés, adressez une réclamation écrite au Service Consommateurs (formulaire de Mon Nébulis ou courrier) en rappelant votre numéro de dossier ; il répond par écrit sous 30 jours.",
  ["procedural", "multi_passage"],
  [("doc-20", "Si la réponse du service client ne vous satisfait pas, ou si vous n'avez pas eu de réponse dans les 10 jours ouvrés, adressez une réclamation écrite au Service Consommateurs, en rappelant votre numéro de dossier"),
   ("doc-20", "Le Service Consommateurs vous répond par écrit dans un délai de 30 jours.")])

q("Quand est-ce que je peux saisir le médiateur ?",
  "Lorsque votre réclamation écrite au Service Consommateurs est restée sans réponse pendant un mois, ou si sa réponse ne vous convient pas, et au plus tard un an après cette réclamation écrite. La saisine est gratuite.",
  ["factual", "multi_passage"],
  [("doc-20", "Si vous n'avez pas obtenu de réponse écrite du Service Consommateurs dans un délai d'un mois, ou si sa réponse ne vous convient pas, vous pouvez saisir gratuitement le Médiateur des services télécoms, organisme indépendant."),
   ("doc-26", "Si la réclamation écrite n'a pas obtenu de réponse dans un délai d'un mois, ou si la réponse ne le satisfait pas, le client peut saisir gratuitement le Médiateur des services télécoms, dans un délai d'un an à compter de sa réclamation écrite.")])

q("Ma connexion a été coupée pendant une semaine à cause d'une panne chez vous, j'ai droit à un dédommagement ?",
  "Oui : pour une interruption totale de plus de 3 jours consécutifs imputable à Nébulis, un avoir de 1/30 de l'abonnement mensuel par jour d'interruption est accordé dès le premier jour, soit 7/30 pour une semaine. Il est appliqué automatiquement sur la facture suivante.",
  ["yes_no", "numerical", "multi_passage"],
  [("doc-20", "Votre connexion internet par la box est totalement interrompue plus de 3 jours consécutifs par notre faute : un avoir égal à 1/30 de votre abonnement mensuel vous est accordé pour chaque jour d'interruption, dès le premier jour."),
   ("doc-26", "L'avoir est appliqué automatiquement sur la facture suivante.")])

q("Quelles sont les différences entre la Box N6E et la Box N7 ?",
  "La Box N7 (Fibre Ultra) passe au Wi-Fi 7, avec un port Ethernet 10 Gb/s, quatre ports 2,5 Gb/s et deux ports USB 3.0, et peut utiliser plusieurs bandes à la fois pour un même appareil ; la Box N6E (Fibre Plus) est en Wi-Fi 6E, avec un port 2,5 Gb/s, trois ports 1 Gb/s et un port USB 3.0.",
  ["comparison", "multi_passage"],
  [("doc-08", "Norme Wi-Fi | Wi-Fi 6 | Wi-Fi 6E | Wi-Fi 7"),
   ("doc-08", "Ports Ethernet | 4 ports 1 Gb/s | 1 port 2,5 Gb/s et 3 ports 1 Gb/s | 1 port 10 Gb/s et 4 ports 2,5 Gb/s"),
   ("doc-08", "Ports USB | 1 port USB 2.0 | 1 port USB 3.0 | 2 ports USB 3.0"),
   ("doc-08", "La Box N7 peut en outre, grâce au Wi-Fi 7, utiliser plusieurs bandes en même temps pour un même appareil compatible, ce qui améliore la stabilité de la connexion.")])

q("Le Kestrel K5, il revient à combien si je prends le forfait Infini ?",
  "Avec le forfait Infini 250 Go 5G et un engagement de 24 mois, le Kestrel K5 coûte 49 €, au lieu de 299 € sans forfait.",
  ["numerical"],
  [("doc-07", "Kestrel K5 | 5G | 299 € | 149 € | 49 €")])

q("Quel est le DAS du Kestrel K5 ?",
  None, ["factual", "numerical"], [])

q("Je peux étaler le paiement de mon nouveau téléphone ?",
  "Oui : pour un achat compris entre 100 € et 1 500 €, vous pouvez payer en 4 fois sans frais par carte bancaire, en ligne ou en boutique, sous réserve d'acceptation.",
  ["yes_no"],
  [("doc-07", "Pour tout achat d'un montant compris entre 100 € et 1 500 €, vous pouvez régler votre téléphone en 4 fois sans frais par carte bancaire : un quart le jour de l'achat, puis trois mensualités égales.")])

q("Combien coûte l'assurance casse et vol pour un téléphone à 700 €, et combien reste à ma charge en cas de sinistre ?",
  "Pour un téléphone de 500 € ou plus, l'Assurance Sérénité Mobile coûte 11,99 € par mois ; une franchise de 49 € reste à votre charge pour chaque sinistre.",
  ["numerical", "multi_passage"],
  [("doc-04", "500 € et plus | 11,99 €"),
   ("doc-04", "Une franchise de 49 € reste à votre charge pour chaque sinistre.")])

q("C'est quoi exactement la limite des appels « illimités » ?",
  "Les appels illimités excluent les numéros spéciaux et surtaxés et sont limités à 250 correspondants différents par mois ; chaque appel est coupé au bout de 3 heures mais peut être renouvelé.",
  ["definition", "factual"],
  [("doc-26", "Les appels, SMS et MMS illimités s'entendent hors numéros spéciaux et surtaxés, dans la limite de 250 correspondants différents par mois ; chaque appel est interrompu au bout de 3 heures et peut être renouvelé.")])

q("Existe-t-il un tarif social pour les personnes qui touchent les minima sociaux ?",
  None, ["yes_no"], [])

q("Je suis en Fibre Ultra depuis 4 mois, je peux redescendre en Fibre Plus pour payer moins cher ?",
  "Non, pas pendant l'engagement : le passage à une offre box de gamme inférieure n'est possible qu'à la fin des 12 mois d'engagement. Passer à une offre supérieure reste en revanche possible à tout moment.",
  ["yes_no", "multi_passage"],
  [("doc-27", "En revanche, le passage à une offre box de gamme inférieure (par exemple de la Fibre Ultra à la Fibre Plus) n'est possible qu'à la fin de la période d'engagement."),
   ("doc-26", "Le passage à une offre box de gamme inférieure n'est possible qu'à l'issue de la période d'engagement.")])

q("ADSL ou VDSL2, qu'est-ce que ça change pour moi ?",
  "L'ADSL2+ va jusqu'à 15 Mb/s en réception et 1 Mb/s en envoi et fonctionne même loin du central ; le VDSL2 atteint 50 Mb/s et 8 Mb/s, mais seulement à moins d'un kilomètre environ du central. La box utilise automatiquement la technologie la plus rapide disponible.",
  ["comparison"],
  [("doc-03", "L'ADSL2+ atteint jusqu'à 15 Mb/s en réception et 1 Mb/s en envoi ; il fonctionne même lorsque le logement est éloigné du central, avec un débit qui baisse avec la distance. Le VDSL2 peut monter jusqu'à 50 Mb/s en réception et 8 Mb/s en envoi, mais seulement pour les logements situés à moins d'un kilomètre environ du central. Au-delà, la box bascule automatiquement en ADSL2+. Vous n'avez rien à choisir : la technologie la plus rapide disponible sur votre ligne est utilisée.")])

q("Ma fibre est en panne depuis trois jours et je télétravaille, vous avez une solution de dépannage ?",
  "Avec la Fibre Plus ou la Fibre Ultra, au-delà de 48 heures de panne non réparée, Nébulis prête gratuitement un routeur 4G Nébulis Go avec une carte SIM de 100 Go, à demander au 0 800 000 001 et à rendre dans les 15 jours suivant le rétablissement de la ligne.",
  ["factual", "multi_passage"],
  [("doc-11", "Si vous êtes abonné à la Fibre Plus ou à la Fibre Ultra et que votre accès internet est interrompu depuis plus de 48 heures à cause d'une panne que nous n'avons pas encore réparée, nous vous prêtons gratuitement un Nébulis Go avec une carte SIM de 100 Go. Il est à demander au 0 800 000 001 et à nous retourner dans les 15 jours qui suivent le rétablissement de votre ligne."),
   ("doc-21", "Les abonnés Fibre Plus et Fibre Ultra dont l'accès à internet est interrompu depuis plus de 48 heures, à cause d'une panne non encore réparée, peuvent demander le prêt gratuit d'un routeur Nébulis Go avec une carte SIM de 100 Go.")])

q("Internet ne marche pas sur mon téléphone alors que j'ai du réseau. Quels réglages APN faut-il mettre ?",
  "Le point d'accès se configure normalement tout seul ; sinon, créez un APN nommé « Nébulis » avec le point d'accès web.nebulis, sans nom d'utilisateur ni mot de passe.",
  ["procedural", "factual"],
  [("doc-24", "Il se configure normalement tout seul ; si ce n'est pas le cas, créez un APN avec le nom « Nébulis » et le point d'accès web.nebulis, sans nom d'utilisateur ni mot de passe.")])

q("Combien coûte le bouquet de chaînes étrangères pour regarder la télé de mon pays d'origine ?",
  None, ["numerical"], [])

q("Mon téléphone me demande le code PUK, je le trouve où ?",
  "Le code PUK à 8 chiffres est disponible dans Mon Nébulis (rubrique Ma ligne, « Codes PIN et PUK ») ou au 0 800 000 000. Attention : après 10 codes PUK erronés, la carte est inutilisable et doit être remplacée (10 €).",
  ["procedural", "factual"],
  [("doc-29", "Après 3 codes PIN erronés, la carte se bloque : saisissez alors le code PUK à 8 chiffres, disponible dans Mon Nébulis (rubrique Ma ligne, « Codes PIN et PUK ») ou au 0 800 000 000. Après 10 codes PUK erronés, la carte est définitivement inutilisable et doit être remplacée (10 €).")])


# ---------------------------------------------------------------------------
# Build
# ---------------------------------------------------------------------------


def is_word_char(ch):
    return ch.isalnum() or ch == "_"


def locate(document, passage, occurrence=1):
    """Return (start, end) of the given occurrence of passage in document."""
    text = document["text"]
    needle = transform(passage, typo=document["typo"], nbsp=document["nbsp"])
    positions = []
    pos = text.find(needle)
    while pos != -1:
        positions.append(pos)
        pos = text.find(needle, pos + 1)
    did = document["external_id"]
    if not positions:
        raise ValueError("passage not found in %s: %r" % (did, passage[:80]))
    if occurrence == 1 and len(positions) > 1:
        raise ValueError(
            "passage occurs %d times in %s, give an occurrence number: %r"
            % (len(positions), did, passage[:80])
        )
    if occurrence > len(positions):
        raise ValueError("occurrence %d not found in %s: %r" % (occurrence, did, passage[:80]))
    start = positions[occurrence - 1]
    end = start + len(needle)
    if needle != needle.strip():
        raise ValueError("passage has leading/trailing whitespace: %r" % passage[:80])
    if start > 0 and is_word_char(text[start - 1]) and is_word_char(text[start]):
        raise ValueError("passage starts inside a word in %s: %r" % (did, passage[:80]))
    if end < len(text) and is_word_char(text[end]) and is_word_char(text[end - 1]):
        raise ValueError("passage ends inside a word in %s: %r" % (did, passage[:80]))
    n_words = len(needle.split())
    if not 5 <= n_words <= 200:
        raise ValueError("passage of %d words in %s: %r" % (n_words, did, passage[:80]))
    return start, end


def build_records():
    docs_by_id = {d["external_id"]: d for d in DOCS}
    doc_records = [
        {
            "external_id": d["external_id"],
            "title": d["title"],
            "text": d["text"],
            "metadata": {"category": d["category"], "language": "fr"},
        }
        for d in DOCS
    ]
    question_records = []
    for i, item in enumerate(QUESTIONS, start=1):
        qid = "q-%03d" % i
        types = item["types"]
        unknown = [t for t in types if t not in TYPES]
        assert not unknown, (qid, unknown)
        assert len(set(types)) == len(types), qid
        types = [t for t in TYPES if t in types]  # canonical order
        answerable = item["answer"] is not None
        passages = []
        for spec in item["passages"]:
            did, passage = spec[0], spec[1]
            occurrence = spec[2] if len(spec) > 2 else 1
            start, end = locate(docs_by_id[did], passage, occurrence)
            passages.append({"document_id": did, "start": start, "end": end})
        if answerable:
            assert 1 <= len(passages) <= 4, qid
        else:
            assert not passages, qid
        assert ("multi_passage" in types) == (len(passages) >= 2), qid
        question_records.append(
            {
                "external_id": qid,
                "question": item["question"],
                "reference_answer": item["answer"],
                "answerable": answerable,
                "types": types,
                "passages": passages,
            }
        )
    return doc_records, question_records


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=HERE, help="output directory (default: next to this script)")
    args = parser.parse_args(argv)
    doc_records, question_records = build_records()
    os.makedirs(args.out, exist_ok=True)
    write_jsonl(os.path.join(args.out, "documents.jsonl"), doc_records)
    write_jsonl(os.path.join(args.out, "questions.jsonl"), question_records)
    print(
        "wrote %d documents and %d questions to %s"
        % (len(doc_records), len(question_records), args.out)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
